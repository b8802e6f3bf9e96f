// Meterwise's window onto libnl-3 / libnl-route-3. Only the NetlinkLinks module imports it.
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
#include <linux/rtnetlink.h>
#include <linux/if.h>
#include <linux/if_arp.h>
#include <sys/socket.h>
#include <poll.h>
#include <errno.h>

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

/// Drains every pending datagram on a non-blocking socket fd. Returns the number of datagrams read,
/// or -ENOBUFS when the kernel reported an overrun (some events were lost).
static inline int mw_drain(int fd) {
    static char buffer[65536];
    int count = 0;
    int overrun = 0;
    for (;;) {
        ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n > 0) { count++; continue; }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == ENOBUFS) { overrun = 1; continue; }
        break;
    }
    return overrun ? -ENOBUFS : count;
}

#endif
