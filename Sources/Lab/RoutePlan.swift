/// Translates one change of `RouteState` into `ip` commands for the device namespace. Pure, so the
/// order of the kernel events the engine will see is tested without root.
///
/// The order is the one a real connection manager produces and never leaves two default routes with
/// the same metric or an up link without its policy route:
/// 1. links going down (the kernel drops their routes, in the main and the policy tables);
/// 2. demotions (a higher metric): the new route first, then the old one removed;
/// 3. links coming up: the link, its policy-table route, its main-table default route;
/// 4. promotions (a lower metric): the new route first, then the old one removed.
public enum RoutePlan {
    /// `ip` arguments (without `ip -n NS`) that take the device namespace from `old` to `new`.
    public static func commands(from old: RouteState, to new: RouteState, uplinks: [LabUplink]) -> [[String]] {
        var downs: [[String]] = []
        var demotions: [[String]] = []
        var ups: [[String]] = []
        var promotions: [[String]] = []
        for uplink in uplinks {
            let name = uplink.name
            let wasUp = old.up.contains(name)
            let isUp = new.up.contains(name)
            let oldMetric = wasUp ? old.metrics[name] : nil
            let newMetric = isUp ? new.metrics[name] : nil
            switch (wasUp, isUp) {
            case (true, false):
                downs.append(["link", "set", name, "down"])
            case (false, true):
                ups.append(["link", "set", name, "up"])
                ups.append(policyRoute(uplink))
                if let newMetric { ups.append(defaultRoute("replace", uplink, metric: newMetric)) }
            case (true, true) where oldMetric != newMetric:
                var change: [[String]] = []
                if let newMetric { change.append(defaultRoute("replace", uplink, metric: newMetric)) }
                if let oldMetric { change.append(defaultRoute("del", uplink, metric: oldMetric)) }
                if let oldMetric, let newMetric, newMetric < oldMetric {
                    promotions += change
                } else {
                    demotions += change
                }
            default:
                break
            }
        }
        return downs + demotions + ups + promotions
    }

    /// `route replace default via GW dev NAME table T`: the link's policy route.
    public static func policyRoute(_ uplink: LabUplink) -> [String] {
        ["route", "replace", "default", "via", uplink.gateway, "dev", uplink.name, "table", "\(uplink.table)"]
    }

    static func defaultRoute(_ verb: String, _ uplink: LabUplink, metric: Int) -> [String] {
        ["route", verb, "default", "via", uplink.gateway, "dev", uplink.name, "metric", "\(metric)"]
    }
}
