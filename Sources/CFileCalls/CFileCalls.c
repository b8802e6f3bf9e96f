#define _GNU_SOURCE
#include "CFileCalls.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <unistd.h>

int mw_thread_setfsuid(uid_t uid) { return (int)syscall(SYS_setfsuid, uid); }

int mw_thread_setfsgid(gid_t gid) { return (int)syscall(SYS_setfsgid, gid); }

int mw_thread_setgroups(size_t count, const gid_t *groups) {
    return (int)syscall(SYS_setgroups, count, groups);
}

int mw_access_as_thread(int dirfd, const char *path, int mode) {
#ifdef SYS_faccessat2
    return (int)syscall(SYS_faccessat2, dirfd, path, mode, AT_EACCESS);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int mw_rename_noreplace(int fromdir, const char *from, int todir, const char *to) {
    return renameat2(fromdir, from, todir, to, RENAME_NOREPLACE);
}

int mw_try_lock(int fd) { return flock(fd, LOCK_EX | LOCK_NB); }

int mw_open_unnamed(int dirfd) { return openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600); }

int mw_unlock(int fd) { return flock(fd, LOCK_UN); }

int mw_so_peercred(void) { return SO_PEERCRED; }

int mw_o_path(void) { return O_PATH; }

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int mw_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int mw_is_procfs(int fd) {
    struct statfs info;
    if (fstatfs(fd, &info) != 0) return -1;
    return info.f_type == 0x9fa0 ? 1 : 0; /* PROC_SUPER_MAGIC */
}

int mw_start_writeback(int fd) { return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE); }

int64_t mw_copy_range(int in, int64_t in_offset, int out, int64_t out_offset, int64_t length) {
    int64_t done = 0;
    while (done < length) {
        loff_t from = in_offset + done, to = out_offset + done;
        ssize_t n = copy_file_range(in, &from, out, &to, (size_t)(length - done), 0);
        if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL)) {
            char buffer[1 << 16];
            size_t want = (size_t)(length - done) < sizeof buffer ? (size_t)(length - done) : sizeof buffer;
            n = pread(in, buffer, want, in_offset + done);
            if (n > 0 && pwrite(out, buffer, (size_t)n, out_offset + done) != n) return -1;
        }
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) break;
        done += n;
    }
    return done;
}

#include <linux/tcp.h>
#include <stddef.h>
#include <string.h>

/// `size` bytes of `info` at `offset`, when the kernel's struct (`length` bytes) reaches that far.
static int mw_tcp_field(const struct mw_tcp_info *info, unsigned length, size_t offset, void *value, size_t size) {
    if (length < offset + size) return 0;
    memcpy(value, info->raw + offset, size);
    return 1;
}

uint64_t mw_tcp_bytes_received(const struct mw_tcp_info *info, unsigned length) {
    uint64_t value = 0;
    mw_tcp_field(info, length, offsetof(struct tcp_info, tcpi_bytes_received), &value, sizeof(value));
    return value;
}

uint32_t mw_tcp_min_rtt(const struct mw_tcp_info *info, unsigned length) {
    uint32_t value = 0;
    if (!mw_tcp_field(info, length, offsetof(struct tcp_info, tcpi_min_rtt), &value, sizeof(value))) return 0;
    if (value == 0 || value == UINT32_MAX) {
        // No sample yet (or a kernel before 4.6): the smoothed RTT of the handshake and request.
        mw_tcp_field(info, length, offsetof(struct tcp_info, tcpi_rtt), &value, sizeof(value));
    }
    return value;
}

uint32_t mw_tcp_advmss(const struct mw_tcp_info *info, unsigned length) {
    uint32_t value = 0;
    mw_tcp_field(info, length, offsetof(struct tcp_info, tcpi_advmss), &value, sizeof(value));
    return value;
}

uint32_t mw_tcp_rcv_rtt(const struct mw_tcp_info *info, unsigned length) {
    uint32_t value = 0;
    mw_tcp_field(info, length, offsetof(struct tcp_info, tcpi_rcv_rtt), &value, sizeof(value));
    return value;
}

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>

int mw_sock_diag_open(int destroyed) {
    int type = SOCK_RAW | SOCK_CLOEXEC | (destroyed ? SOCK_NONBLOCK : 0);
    int fd = socket(AF_NETLINK, type, NETLINK_SOCK_DIAG);
    if (fd < 0) return -errno;
    if (destroyed) {
        struct sockaddr_nl address = {.nl_family = AF_NETLINK};
        address.nl_groups = (1u << (SKNLGRP_INET_TCP_DESTROY - 1)) | (1u << (SKNLGRP_INET6_TCP_DESTROY - 1));
        int size = 1 << 20;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
        if (bind(fd, (struct sockaddr *)&address, sizeof(address)) != 0) {
            int error = errno;
            close(fd);
            return -error;
        }
    }
    return fd;
}

static int mw_has(const uint64_t *values, size_t count, uint64_t value) {
    if (value == 0) return 0;
    for (size_t i = 0; i < count; i++)
        if (values[i] == value) return 1;
    return 0;
}

/// The socket a sock_diag message describes; 0 when the message is not one.
static int mw_tcp_socket_of(const struct nlmsghdr *header, struct mw_tcp_socket *socket) {
    if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY || header->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
        return 0;
    const struct inet_diag_msg *message = NLMSG_DATA(header);
    socket->cookie = (uint64_t)message->id.idiag_cookie[0] | ((uint64_t)message->id.idiag_cookie[1] << 32);
    socket->inode = message->idiag_inode;
    socket->bytes_received = 0;
    size_t offset = NLMSG_ALIGN(sizeof(struct inet_diag_msg));
    size_t end = header->nlmsg_len - NLMSG_HDRLEN;
    while (offset + sizeof(struct nlattr) <= end) {
        const struct nlattr *attribute = (const struct nlattr *)((const char *)message + offset);
        if (attribute->nla_len < sizeof(struct nlattr) || offset + attribute->nla_len > end) break;
        if ((attribute->nla_type & NLA_TYPE_MASK) == INET_DIAG_INFO) {
            struct mw_tcp_info info;
            unsigned length = attribute->nla_len - NLA_HDRLEN;
            if (length > sizeof(info.raw)) length = sizeof(info.raw);
            memcpy(info.raw, (const char *)attribute + NLA_HDRLEN, length);
            socket->bytes_received = mw_tcp_bytes_received(&info, length);
        }
        offset += NLA_ALIGN(attribute->nla_len);
    }
    return 1;
}

// The receive buffers below come from the heap, one per call: as `static __thread` arrays they were part of
// every thread's static TLS block, 64 KiB each, zeroed at the top of each thread's stack whether or not the
// thread ever called them (about 1.7 MiB of anonymous memory in a `get` with nine threads).
enum { mw_netlink_buffer_size = 1 << 16 };

static int mw_sock_diag_dump_into(char *buffer, int fd, int family, const uint64_t *inodes, size_t inode_count,
                                  const uint64_t *cookies, size_t cookie_count, struct mw_tcp_socket *out,
                                  size_t capacity) {
    struct {
        struct nlmsghdr header;
        struct inet_diag_req_v2 request;
    } query = {0};
    query.header.nlmsg_len = sizeof(query);
    query.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    query.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    query.request.sdiag_family = (uint8_t)family;
    query.request.sdiag_protocol = IPPROTO_TCP;
    query.request.idiag_ext = 1 << (INET_DIAG_INFO - 1);
    // Every state but LISTEN (no bytes) and TIME_WAIT (no tcp_info; its bytes were reported as it was destroyed).
    query.request.idiag_states = ~((1u << 10) | (1u << 6));
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, &query, sizeof(query), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) return -errno;
    size_t written = 0;
    for (;;) {
        ssize_t received = recv(fd, buffer, mw_netlink_buffer_size, 0);
        if (received < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (received == 0) return (int)written;
        int length = (int)received;
        for (struct nlmsghdr *header = (struct nlmsghdr *)buffer; NLMSG_OK(header, length);
             header = NLMSG_NEXT(header, length)) {
            if (header->nlmsg_type == NLMSG_DONE) return (int)written;
            if (header->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *error = NLMSG_DATA(header);
                return error->error < 0 ? error->error : -EIO;
            }
            struct mw_tcp_socket socket;
            if (!mw_tcp_socket_of(header, &socket)) continue;
            if (written < capacity && (mw_has(inodes, inode_count, socket.inode) || mw_has(cookies, cookie_count, socket.cookie)))
                out[written++] = socket;
        }
    }
}

int mw_sock_diag_dump(int fd, int family, const uint64_t *inodes, size_t inode_count, const uint64_t *cookies,
                      size_t cookie_count, struct mw_tcp_socket *out, size_t capacity) {
    char *buffer = malloc(mw_netlink_buffer_size);
    if (!buffer) return -ENOMEM;
    int result = mw_sock_diag_dump_into(buffer, fd, family, inodes, inode_count, cookies, cookie_count, out, capacity);
    free(buffer);
    return result;
}

static int mw_sock_diag_destroyed_into(char *buffer, int fd, const uint64_t *cookies, size_t cookie_count,
                                       struct mw_tcp_socket *out, size_t capacity, int *dropped) {
    size_t written = 0;
    *dropped = 0;
    for (;;) {
        ssize_t received = recv(fd, buffer, mw_netlink_buffer_size, MSG_DONTWAIT);
        if (received < 0) {
            if (errno == EINTR) continue;
            if (errno == ENOBUFS) {
                *dropped = 1;
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) return (int)written;
            return -errno;
        }
        int length = (int)received;
        for (struct nlmsghdr *header = (struct nlmsghdr *)buffer; NLMSG_OK(header, length);
             header = NLMSG_NEXT(header, length)) {
            struct mw_tcp_socket socket;
            if (!mw_tcp_socket_of(header, &socket)) continue;
            if (written < capacity && mw_has(cookies, cookie_count, socket.cookie)) out[written++] = socket;
        }
    }
}

int mw_sock_diag_destroyed(int fd, const uint64_t *cookies, size_t cookie_count, struct mw_tcp_socket *out,
                           size_t capacity, int *dropped) {
    char *buffer = malloc(mw_netlink_buffer_size);
    if (!buffer) return -ENOMEM;
    int result = mw_sock_diag_destroyed_into(buffer, fd, cookies, cookie_count, out, capacity, dropped);
    free(buffer);
    return result;
}

#include <malloc.h>

void mw_tune_malloc(int trim_threshold, int mmap_threshold, int arenas) {
    mallopt(M_TRIM_THRESHOLD, trim_threshold);
    mallopt(M_MMAP_THRESHOLD, mmap_threshold);
    if (arenas > 0) mallopt(M_ARENA_MAX, arenas);
}
