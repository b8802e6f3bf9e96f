internal import CYaml

/// The size of the tree a YAML text stands for, measured on libyaml's event stream before Yams builds
/// anything. Yams composes an alias as a shared reference and then hashes every mapping key, so a key that
/// is an alias of an alias of ... (a "billion laughs" file of a few hundred bytes) is walked in full: 10^8
/// nodes took 11 s. Counting events costs one pass over the text, whatever the aliases say.
struct YAMLExpansion {
    /// Nodes a file may expand to, aliases counted at their full size. The shipped policies have ~300.
    static let maxNodes = 100_000
    /// Nested collections a file may open; Yams composes recursively, so deep nesting would exhaust the stack.
    static let maxDepth = 64

    /// Why a text is refused, at the event that crossed the limit (1-based line and column).
    struct Excess: Error, Equatable {
        var line: Int
        var column: Int
        var message: String
        var hint: String
    }

    /// Checks `text` against both limits. Syntax errors are not reported here: Yams reports them with the
    /// same location when it composes the text, which it may then do safely.
    static func check(
        _ text: String, maxNodes: Int = YAMLExpansion.maxNodes, maxDepth: Int = YAMLExpansion.maxDepth
    ) -> Excess? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { return nil }  // libyaml asserts on a null input; Yams reports "empty"
        return bytes.withUnsafeBufferPointer { buffer in
            var parser = yaml_parser_t()
            guard yaml_parser_initialize(&parser) == 1 else { return nil }
            defer { yaml_parser_delete(&parser) }
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var counter = Counter(maxNodes: maxNodes, maxDepth: maxDepth)
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else { return nil }
                defer { yaml_event_delete(&event) }
                let line = Int(event.start_mark.line) + 1
                let column = Int(event.start_mark.column) + 1
                let step: Counter.Step
                switch event.type {
                case YAML_STREAM_END_EVENT: return nil
                case YAML_SCALAR_EVENT: step = .scalar(anchor: name(event.data.scalar.anchor))
                case YAML_ALIAS_EVENT: step = .alias(name(event.data.alias.anchor) ?? "")
                case YAML_SEQUENCE_START_EVENT: step = .open(anchor: name(event.data.sequence_start.anchor))
                case YAML_MAPPING_START_EVENT: step = .open(anchor: name(event.data.mapping_start.anchor))
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT: step = .close
                default: continue
                }
                if let excess = counter.take(step, line: line, column: column) { return excess }
            }
        }
    }

    static func name(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        guard let pointer else { return nil }
        var end = 0
        while pointer[end] != 0 { end += 1 }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: end), as: UTF8.self)
    }

    /// The pure part: expanded sizes of open collections and of anchors, from a stream of steps.
    struct Counter {
        enum Step {
            case scalar(anchor: String?)
            case alias(String)
            case open(anchor: String?)
            case close
        }

        let maxNodes: Int
        let maxDepth: Int
        /// Every node so far, each alias counted as the size of what it names. Never above `maxNodes`, so
        /// no sum below can overflow.
        var total = 0
        var anchors: [String: Int] = [:]
        var sawAlias = false
        /// (size so far, anchor) of each open collection, outermost first.
        var open: [(size: Int, anchor: String?)] = []

        mutating func take(_ step: Step, line: Int, column: Int) -> Excess? {
            var finished: (size: Int, anchor: String?)
            switch step {
            case .scalar(let anchor): finished = (1, anchor)
            case .alias(let name):
                sawAlias = true
                finished = (anchors[name] ?? 1, nil)  // an unknown alias: Yams reports it
            case .open(let anchor):
                guard open.count < maxDepth else {
                    return Excess(
                        line: line, column: column,
                        message: "the file nests lists and mappings more than \(maxDepth) deep",
                        hint: "flatten the structure; a policy needs fewer than 10 levels")
                }
                total += 1
                open.append((1, anchor))
                return total > maxNodes ? tooMany(line, column) : nil
            case .close:
                guard let last = open.popLast() else { return nil }
                if let anchor = last.anchor { anchors[anchor] = last.size }
                if !open.isEmpty { open[open.count - 1].size += last.size }
                return nil
            }
            total += finished.size
            if total > maxNodes { return tooMany(line, column) }
            if let anchor = finished.anchor { anchors[anchor] = finished.size }
            if !open.isEmpty { open[open.count - 1].size += finished.size }
            return nil
        }

        func tooMany(_ line: Int, _ column: Int) -> Excess {
            guard sawAlias else {
                return Excess(
                    line: line, column: column, message: "the file holds more than \(maxNodes) values",
                    hint: "split it into drop-in files, or remove what is not needed")
            }
            return Excess(
                line: line, column: column,
                message: "aliases expand too much: with them the file stands for more than \(maxNodes) values",
                hint: "write the values out, or use fewer and less nested `*alias` references")
        }
    }
}
