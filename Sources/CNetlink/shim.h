// Meterwise's window onto libnl-3 / libnl-route-3 / libnl-genl-3 (nl80211). Only the NetlinkLinks module imports it.
// Swift cannot call C macros, variadic functions or use some enum-like #defines, so small static
// inline wrappers live here. Do not include <net/if.h>: its IFF_* enumerators clash with
// <linux/if.h>, which libnl pulls in.
#ifndef METERWISE_CNETLINK_SHIM_H
#define METERWISE_CNETLINK_SHIM_H

#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <netlink/cache.h>
#include <netlink/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/addr.h>
#include <netlink/route/route.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/rtnl.h>
#include <linux/rtnetlink.h>
#include <linux/if.h>
#include <linux/if_arp.h>
#include <sys/socket.h>
#include <poll.h>
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netlink/msg.h>
#include <netlink/utils.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/nl80211.h>

/// Enters a network namespace on the calling thread (setns with CLONE_NEWNET). 0 or -1 with errno.
extern int setns(int fd, int nstype);
static inline int mw_enter_netns(int fd) { return setns(fd, 0x40000000 /* CLONE_NEWNET */); }

static inline unsigned int mw_iff_up(void) { return IFF_UP; }
static inline unsigned int mw_iff_running(void) { return IFF_RUNNING; }
static inline unsigned int mw_iff_lower_up(void) { return IFF_LOWER_UP; }

static inline int mw_rtnlgrp_link(void) { return RTNLGRP_LINK; }
static inline int mw_rtnlgrp_ipv4_ifaddr(void) { return RTNLGRP_IPV4_IFADDR; }
static inline int mw_rtnlgrp_ipv6_ifaddr(void) { return RTNLGRP_IPV6_IFADDR; }
static inline int mw_rtnlgrp_ipv4_route(void) { return RTNLGRP_IPV4_ROUTE; }
static inline int mw_rtnlgrp_ipv6_route(void) { return RTNLGRP_IPV6_ROUTE; }

static inline int mw_rt_table_main(void) { return RT_TABLE_MAIN; }
static inline int mw_rtn_unicast(void) { return RTN_UNICAST; }

/// Subscribes a socket to every group Meterwise watches. Wraps the variadic nl_socket_add_memberships.
static inline int mw_subscribe_all(struct nl_sock *sock) {
    return nl_socket_add_memberships(sock, RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR,
                                     RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, 0);
}

/// The ifindex of a route's first next hop, or 0.
static inline int mw_route_first_ifindex(struct rtnl_route *route) {
    if (rtnl_route_get_nnexthops(route) < 1) return 0;
    struct rtnl_nexthop *nh = rtnl_route_nexthop_n(route, 0);
    return nh ? rtnl_route_nh_get_ifindex(nh) : 0;
}

/// The gateway of a route's first next hop, or NULL.
static inline struct nl_addr *mw_route_first_gateway(struct rtnl_route *route) {
    if (rtnl_route_get_nnexthops(route) < 1) return NULL;
    struct rtnl_nexthop *nh = rtnl_route_nexthop_n(route, 0);
    return nh ? rtnl_route_nh_get_gateway(nh) : NULL;
}

/// True when a netlink error code means the socket's receive buffer overran (events were lost).
static inline int mw_is_overrun(int nlerr) { return nlerr == -NLE_NOMEM || nlerr == -NLE_DUMP_INTR; }

/// One default route (destination length 0, main table, unicast), as Meterwise keeps it.
struct mw_default_route {
    int family;           // AF_INET or AF_INET6
    int ifindex;          // the first next hop's link, 0 when none
    unsigned int metric;  // RTA_PRIORITY
    char gateway[48];     // the first next hop's gateway as text, "" when none
};

/// What one netlink route message is: -1 not a route message, 0 a route Meterwise ignores (not a main-table
/// unicast default route), 1 a default route (filled into `out`). Reads only the header and a few
/// attributes: a million other routes cost a header check each, no allocation.
static inline int mw_parse_default_route(const struct nlmsghdr *nlh, struct mw_default_route *out) {
    if (nlh->nlmsg_type != RTM_NEWROUTE && nlh->nlmsg_type != RTM_DELROUTE) return -1;
    if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg))) return 0;
    const struct rtmsg *rtm = (const struct rtmsg *)NLMSG_DATA(nlh);
    if (rtm->rtm_dst_len != 0 || rtm->rtm_type != RTN_UNICAST) return 0;
    if (rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) return 0;
    unsigned int table = rtm->rtm_table;
    memset(out, 0, sizeof *out);
    out->family = rtm->rtm_family;
    const void *gateway = NULL;
    int remaining = (int)(nlh->nlmsg_len - NLMSG_LENGTH(sizeof(struct rtmsg)));
    for (const struct rtattr *rta = RTM_RTA(rtm); RTA_OK(rta, remaining); rta = RTA_NEXT(rta, remaining)) {
        int payload = (int)RTA_PAYLOAD(rta);
        switch (rta->rta_type) {
        case RTA_TABLE: if (payload >= 4) table = *(const unsigned int *)RTA_DATA(rta); break;
        case RTA_OIF: if (payload >= 4) out->ifindex = *(const int *)RTA_DATA(rta); break;
        case RTA_PRIORITY: if (payload >= 4) out->metric = *(const unsigned int *)RTA_DATA(rta); break;
        case RTA_GATEWAY:
            if (payload == (rtm->rtm_family == AF_INET ? 4 : 16)) gateway = RTA_DATA(rta);
            break;
        case RTA_MULTIPATH:
            if (out->ifindex == 0 && payload >= (int)sizeof(struct rtnexthop)) {
                const struct rtnexthop *nh = (const struct rtnexthop *)RTA_DATA(rta);
                if (nh->rtnh_len >= sizeof(struct rtnexthop) && nh->rtnh_len <= payload) {
                    out->ifindex = nh->rtnh_ifindex;
                    int left = nh->rtnh_len - (int)sizeof(struct rtnexthop);
                    for (const struct rtattr *a = RTNH_DATA(nh); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
                        if (a->rta_type == RTA_GATEWAY && (int)RTA_PAYLOAD(a) == (rtm->rtm_family == AF_INET ? 4 : 16))
                            gateway = RTA_DATA(a);
                    }
                }
            }
            break;
        default: break;
        }
    }
    if (table != RT_TABLE_MAIN) return 0;
    if (gateway) inet_ntop(rtm->rtm_family, gateway, out->gateway, sizeof out->gateway);
    return 1;
}

/// Where parsed default routes go: a caller-owned array of changes in the order they came; `added[i]` is
/// the kind of change i (see MW_ROUTE_ADDED below); a dump only adds.
struct mw_route_sink {
    struct mw_default_route *routes;
    unsigned char *added;
    int count;
    int capacity;
    int full;            // more default routes than `capacity`: the caller dumps again with more room
    int links_changed;   // a link or address message was seen (events only)
    long long messages;  // route messages seen, default or not
};

/// Change kinds in `mw_route_sink.added`: a default route removed (0) or added (1), or a link that went
/// down or away (2; `routes[i].ifindex` says which): the kernel drops its IPv4 routes without a message, so
/// the reader drops them at that point of the sequence — a link that comes back up in the same burst gets
/// only the routes added after it.
enum { MW_ROUTE_REMOVED = 0, MW_ROUTE_ADDED = 1, MW_LINK_DOWN = 2 };

static inline void mw_sink_append(struct mw_route_sink *sink, const struct mw_default_route *route, unsigned char kind) {
    if (sink->count >= sink->capacity) { sink->full = 1; return; }
    sink->routes[sink->count] = *route;
    sink->added[sink->count] = kind;
    sink->count++;
}

static inline void mw_sink_add(struct mw_route_sink *sink, const struct nlmsghdr *nlh) {
    struct mw_default_route route;
    int kind = mw_parse_default_route(nlh, &route);
    if (kind < 0) {
        if (nlh->nlmsg_type == RTM_NEWLINK || nlh->nlmsg_type == RTM_DELLINK) {
            sink->links_changed = 1;
            if (nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg))) {
                const struct ifinfomsg *ifi = (const struct ifinfomsg *)NLMSG_DATA(nlh);
                if (nlh->nlmsg_type == RTM_DELLINK || !(ifi->ifi_flags & IFF_UP)) {
                    memset(&route, 0, sizeof route);
                    route.ifindex = ifi->ifi_index;
                    mw_sink_append(sink, &route, MW_LINK_DOWN);
                }
            }
        } else if (nlh->nlmsg_type == RTM_NEWADDR || nlh->nlmsg_type == RTM_DELADDR) {
            sink->links_changed = 1;
        }
        return;
    }
    sink->messages++;
    if (kind == 0) return;
    mw_sink_append(sink, &route, nlh->nlmsg_type == RTM_NEWROUTE ? MW_ROUTE_ADDED : MW_ROUTE_REMOVED);
}

static inline int mw_sink_callback(struct nl_msg *msg, void *arg) {
    mw_sink_add((struct mw_route_sink *)arg, nlmsg_hdr(msg));
    return NL_OK;
}

/// Dumps the routes of both families, keeping only the default ones: streamed and filtered while
/// parsing, never cached. 0, or a negative libnl error.
static inline int mw_dump_default_routes(struct nl_sock *sock, struct mw_route_sink *sink) {
    int err = nl_rtgen_request(sock, RTM_GETROUTE, AF_UNSPEC, NLM_F_DUMP);
    if (err < 0) return err;
    err = nl_socket_modify_cb(sock, NL_CB_VALID, NL_CB_CUSTOM, mw_sink_callback, sink);
    if (err < 0) return err;
    err = nl_recvmsgs_default(sock);
    return err < 0 ? err : 0;
}

/// Reads every pending datagram on a non-blocking event socket and sorts what it says into `sink`:
/// default-route changes in order, whether links or addresses changed. Returns the number of datagrams
/// read, -ENOBUFS when the kernel reported an overrun (events were lost: dump everything again), or
/// another negative errno when the socket failed.
static inline int mw_read_events(int fd, struct mw_route_sink *sink) {
    // One buffer per call, from the heap: two monitors in one process (tests, benches) must not share it, and
    // as a thread-local array it was 64 KiB of every thread's static TLS block, zeroed on each thread's stack.
    enum { size = 1 << 16 };
    char *buffer = malloc(size);
    if (!buffer) return -ENOMEM;
    int count = 0;
    int overrun = 0;
    for (;;) {
        ssize_t n = recv(fd, buffer, size, MSG_DONTWAIT);
        if (n > 0) {
            count++;
            int left = (int)n;
            for (const struct nlmsghdr *nlh = (const struct nlmsghdr *)buffer; NLMSG_OK(nlh, left);
                 nlh = NLMSG_NEXT(nlh, left)) {
                mw_sink_add(sink, nlh);
            }
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == ENOBUFS) { overrun = 1; continue; }
        int failure = n < 0 && errno != EAGAIN && errno != EWOULDBLOCK ? -errno : 0;
        if (failure) {
            free(buffer);
            return failure;
        }
        break;
    }
    free(buffer);
    return overrun ? -ENOBUFS : count;
}

/// Sends one generic netlink dump request (`cmd` with NLM_F_DUMP) to `family`, restricted to one interface
/// (NL80211_ATTR_IFINDEX) when `ifindex` > 0. Wraps genlmsg_put, whose flags Swift cannot spell. 0 or a
/// negative libnl error.
static inline int mw_genl_dump_request(struct nl_sock *sock, int family, uint8_t cmd, uint32_t ifindex) {
    struct nl_msg *msg = nlmsg_alloc();
    if (!msg) return -NLE_NOMEM;
    int err = 0;
    if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, NLM_F_DUMP, cmd, 0)) err = -NLE_NOMEM;
    if (err == 0 && ifindex > 0) err = nla_put_u32(msg, NL80211_ATTR_IFINDEX, ifindex);
    if (err == 0) err = nl_send_auto(sock, msg);
    nlmsg_free(msg);
    return err < 0 ? err : 0;
}

/// Makes `callback` see every valid message `sock` receives, with `arg`. 0 or a negative libnl error.
static inline int mw_on_valid_message(struct nl_sock *sock, nl_recvmsg_msg_cb_t callback, void *arg) {
    return nl_socket_modify_cb(sock, NL_CB_VALID, NL_CB_CUSTOM, callback, arg);
}

/// The interface index the kernel would send packets to `text` (an IPv4 or IPv6 address) out of, as
/// `ip route get` answers: its routing decision, routes other than the default ones and policy rules
/// included; with `from` (a local address, or NULL), for packets from that source address, as rules by
/// source route them. `sock` is a connected NETLINK_ROUTE socket with auto-ack off, in the namespace asked
/// about. >0: the index; 0: no route (unreachable, prohibited, a source that is not local) or no single
/// output interface (a multipath route); <0: a libnl error. `*prefix` is the prefix length of the route that
/// matched (0: a default route), read with RTM_F_FIB_MATCH.
static inline int mw_route_get_oif(struct nl_sock *sock, const char *text, const char *from, int *prefix) {
    *prefix = -1;
    struct nl_addr *dst = NULL;
    struct nl_addr *src = NULL;
    int err = nl_addr_parse(text, AF_UNSPEC, &dst);
    if (err < 0) return err;
    int family = nl_addr_get_family(dst);
    if (family != AF_INET && family != AF_INET6) { nl_addr_put(dst); return -NLE_AF_NOSUPPORT; }
    if (from && nl_addr_parse(from, family, &src) < 0) src = NULL;
    struct nl_msg *msg = nlmsg_alloc_simple(RTM_GETROUTE, NLM_F_REQUEST);
    if (!msg) { nl_addr_put(dst); if (src) nl_addr_put(src); return -NLE_NOMEM; }
    struct rtmsg rtm;
    memset(&rtm, 0, sizeof rtm);
    rtm.rtm_family = (unsigned char)family;
    rtm.rtm_dst_len = (unsigned char)(family == AF_INET ? 32 : 128);
    rtm.rtm_flags = RTM_F_FIB_MATCH;
    if (src) rtm.rtm_src_len = rtm.rtm_dst_len;
    err = nlmsg_append(msg, &rtm, sizeof rtm, NLMSG_ALIGNTO);
    if (err >= 0) err = nla_put_addr(msg, RTA_DST, dst);
    if (err >= 0 && src) err = nla_put_addr(msg, RTA_SRC, src);
    nl_addr_put(dst);
    if (src) nl_addr_put(src);
    if (err >= 0) err = nl_send_auto(sock, msg);
    nlmsg_free(msg);
    if (err < 0) return err;
    struct sockaddr_nl peer;
    unsigned char *buffer = NULL;
    int n = nl_recv(sock, &peer, &buffer, NULL);
    if (n <= 0) { free(buffer); return n < 0 ? n : -NLE_FAILURE; }
    int result = 0;
    struct nlmsghdr *hdr = (struct nlmsghdr *)buffer;
    for (; nlmsg_ok(hdr, n); hdr = nlmsg_next(hdr, &n)) {
        if (hdr->nlmsg_type == NLMSG_ERROR) break;
        if (hdr->nlmsg_type != RTM_NEWROUTE) continue;
        struct nlattr *tb[RTA_MAX + 1];
        if (nlmsg_parse(hdr, sizeof(struct rtmsg), tb, RTA_MAX, NULL) == 0 && tb[RTA_OIF]) {
            result = (int)nla_get_u32(tb[RTA_OIF]);
            *prefix = ((struct rtmsg *)nlmsg_data(hdr))->rtm_dst_len;
        }
        break;
    }
    free(buffer);
    return result;
}

#endif
