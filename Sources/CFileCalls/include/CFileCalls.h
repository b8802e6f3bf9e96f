// The few Linux calls Swift cannot reach through Glibc: per-thread file-system credentials (the
// raw syscalls; glibc's setgroups() changes every thread of the process), faccessat2 with AT_EACCESS,
// renameat2 with RENAME_NOREPLACE, flock, SO_PEERCRED, O_PATH and fstatfs, sync_file_range, the kernel's
// tcp_info, mallopt, pidfd_open.
// Imported by Transfer (files as the asker, write-back, connections), Engine (the asker of a control
// connection) and the executable (allocator tuning) only.
#ifndef METERWISE_CFILECALLS_H
#define METERWISE_CFILECALLS_H

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

/// Sets the calling thread's file-system uid; returns the previous one. (setfsuid(2): per thread.)
int mw_thread_setfsuid(uid_t uid);
/// Sets the calling thread's file-system gid; returns the previous one.
int mw_thread_setfsgid(gid_t gid);
/// Sets the calling thread's supplementary groups only. 0 or -1 with errno.
int mw_thread_setgroups(size_t count, const gid_t *groups);
/// Whether the calling thread's file-system identity (fsuid, fsgid, groups) may do `mode` (W_OK|X_OK...)
/// on `path` relative to `dirfd`. 0 or -1 with errno (EACCES when it may not).
int mw_access_as_thread(int dirfd, const char *path, int mode);
/// rename that fails with EEXIST instead of replacing `to`. 0 or -1 with errno.
int mw_rename_noreplace(int fromdir, const char *from, int todir, const char *to);
/// flock(fd, LOCK_EX | LOCK_NB): 0, or -1 with errno (EWOULDBLOCK when another holds it).
int mw_try_lock(int fd);
/// openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600): an unnamed file, to ask whether the thread
/// may create files there. A descriptor or -1 with errno.
int mw_open_unnamed(int dirfd);
/// flock(fd, LOCK_UN).
int mw_unlock(int fd);
/// `struct ucred` as SO_PEERCRED fills it (glibc hides it without _GNU_SOURCE).
struct mw_peer_credentials {
    pid_t pid;
    uid_t uid;
    gid_t gid;
};
/// SO_PEERCRED.
int mw_so_peercred(void);
/// O_PATH (glibc hides it without _GNU_SOURCE).
int mw_o_path(void);
/// pidfd_open(pid, 0) with O_CLOEXEC: a descriptor that polls readable once the process has exited
/// (Linux 5.3). A descriptor or -1 with errno (ENOSYS on older kernels).
int mw_pidfd_open(pid_t pid);
/// 1 when `fd` is on procfs (fstatfs's f_type is PROC_SUPER_MAGIC), 0 when not, -1 with errno.
int mw_is_procfs(int fd);
/// Starts write-back of every dirty page of `fd` without waiting for it (sync_file_range
/// SYNC_FILE_RANGE_WRITE), so a later fdatasync has little left to do.
int mw_start_writeback(int fd);
/// Copies `length` bytes from `in` at `in_offset` to `out` at `out_offset` inside the kernel
/// (copy_file_range, falling back to pread/pwrite where the file systems cannot): bytes copied, or -1 with
/// errno. Neither descriptor's file offset moves.
int64_t mw_copy_range(int in, int64_t in_offset, int out, int64_t out_offset, int64_t length);

/// Room for the kernel's `struct tcp_info` (TCP_INFO), read as bytes: glibc's own declaration stops
/// before the newer fields.
struct mw_tcp_info {
    unsigned char raw[512];
};
/// `tcpi_bytes_received` (bytes the kernel received in order, read by the program or not) from the
/// first `length` bytes of `info`; 0 when the kernel's struct is too old to have it (before Linux 4.1).
uint64_t mw_tcp_bytes_received(const struct mw_tcp_info *info, unsigned length);
/// The connection's lowest round-trip time seen, in microseconds (`tcpi_min_rtt`, else the smoothed
/// `tcpi_rtt`); 0 when unknown.
uint32_t mw_tcp_min_rtt(const struct mw_tcp_info *info, unsigned length);
/// The largest segment this end told the peer it may send (`tcpi_advmss`); 0 when unknown.
uint32_t mw_tcp_advmss(const struct mw_tcp_info *info, unsigned length);
/// The receiver's own round-trip estimate in microseconds (`tcpi_rcv_rtt`): from TCP timestamps, the time
/// from an ACK this end sent to the data that echoes it, queues on the way included; it follows a lower
/// sample at once and a higher one by an eighth per sample. 0 when unknown (no timestamps, no data yet).
uint32_t mw_tcp_rcv_rtt(const struct mw_tcp_info *info, unsigned length);

/// One TCP socket as the kernel's sock_diag reports it: `cookie` names the socket for its whole life,
/// `inode` is the one in /proc/PID/fd (`socket:[N]`; 0 once no process holds the socket, or in a destroy
/// message), `bytes_received` is `tcpi_bytes_received` (payload received in order, read or not).
struct mw_tcp_socket {
    uint64_t cookie;
    uint64_t inode;
    uint64_t bytes_received;
};
/// A NETLINK_SOCK_DIAG socket (close-on-exec). With `destroyed` != 0 it is non-blocking and joined to the
/// groups that report every TCP socket (IPv4 and IPv6) of this network namespace as it is destroyed, with its
/// last tcp_info: what a socket received between the last look and its end. No privilege needed.
/// Returns the descriptor, or -errno.
int mw_sock_diag_open(int destroyed);
/// Dumps the TCP sockets of `family` (AF_INET or AF_INET6) with their tcp_info over `fd` (from
/// `mw_sock_diag_open(0)`), and writes to `out` (up to `capacity`) those whose inode is one of `inodes` or
/// whose cookie is one of `cookies`. Returns how many were written, or -errno.
int mw_sock_diag_dump(int fd, int family, const uint64_t *inodes, size_t inode_count, const uint64_t *cookies,
                      size_t cookie_count, struct mw_tcp_socket *out, size_t capacity);
/// Reads every destroy message waiting on `fd` (from `mw_sock_diag_open(1)`) and writes to `out` (up to
/// `capacity`) the sockets whose cookie is one of `cookies`.
/// `*dropped` is set to 1 when the kernel dropped messages since the last call (the socket buffer was full).
/// Returns how many were written, or -errno.
int mw_sock_diag_destroyed(int fd, const uint64_t *cookies, size_t cookie_count, struct mw_tcp_socket *out,
                           size_t capacity, int *dropped);

/// Fixes glibc's trim and mmap thresholds (mallopt), which also turns off their dynamic adjustment: a
/// download's buffers are then reused from the heap instead of being returned to the kernel and faulted
/// in again (tens of thousands of page faults per GiB). `arenas` > 0 caps glibc's arenas (M_ARENA_MAX).
void mw_tune_malloc(int trim_threshold, int mmap_threshold, int arenas);

#endif
