#define _GNU_SOURCE
#include "CFileCalls.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
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

int mw_is_procfs(int fd) {
    struct statfs info;
    if (fstatfs(fd, &info) != 0) return -1;
    return info.f_type == 0x9fa0 ? 1 : 0; /* PROC_SUPER_MAGIC */
}

int mw_start_writeback(int fd) { return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE); }

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

#include <malloc.h>

void mw_tune_malloc(int trim_threshold, int mmap_threshold, int arenas) {
    mallopt(M_TRIM_THRESHOLD, trim_threshold);
    mallopt(M_MMAP_THRESHOLD, mmap_threshold);
    if (arenas > 0) mallopt(M_ARENA_MAX, arenas);
}
