#define _GNU_SOURCE
#include "worker_ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* What every child cvhost starts gets: every signal's default action, none blocked, and a process
 * group of its own (a Ctrl-C is cvhost's to handle; the group is what cvhost kills at the end). */
static int child_attributes(posix_spawnattr_t *attr) {
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    int rc = posix_spawnattr_setsigdefault(attr, &all);
    if (!rc) rc = posix_spawnattr_setsigmask(attr, &none);
    if (!rc) rc = posix_spawnattr_setpgroup(attr, 0);
    if (!rc) rc = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
    return rc;
}

int cvhost_spawn_worker(const char *exe, char *const argv[], char *const envp[], const int *fds, int nfds, const char *cwd,
                        int err_fd, pid_t *pid) {
    if (nfds < 0 || nfds > 64) return EINVAL;
    /* Above the sockets' places too, for the same reason. */
    int err = fcntl(err_fd >= 0 ? err_fd : 2, F_DUPFD_CLOEXEC, 3 + nfds);
    if (err < 0) return errno;
    // Copies of the sockets above 3 + nfds (close-on-exec, closed again below), so that placing
    // them at 3.. in the worker cannot overwrite one another. The lowest free numbers, not fixed
    // ones: a process allowed few descriptors (ulimit -n 512) has no descriptor 900.
    int high[64];
    for (int i = 0; i < nfds; i++) {
        high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3 + nfds);
        if (high[i] < 0) {
            int e = errno;
            while (i-- > 0) close(high[i]);
            close(err);
            return e;
        }
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc) goto close_high;
    if ((rc = posix_spawnattr_init(&attr))) {
        posix_spawn_file_actions_destroy(&actions);
        goto close_high;
    }
    for (int i = 0; i < nfds && !rc; i++) rc = posix_spawn_file_actions_adddup2(&actions, high[i], 3 + i);
    if (!rc) rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&actions, err, 2);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&actions, err, 1);
    if (!rc) rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3 + nfds);
    if (!rc && cwd) rc = posix_spawn_file_actions_addchdir_np(&actions, cwd);
    if (!rc) rc = child_attributes(&attr);
    if (!rc) rc = posix_spawn(pid, exe, &actions, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
close_high:
    for (int i = 0; i < nfds; i++) close(high[i]);
    close(err);
    return rc;
}

int cvhost_spawn_captured(const char *exe, char *const argv[], char *const envp[], const char *cwd, int out_fd, int err_fd,
                          pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc) return rc;
    if ((rc = posix_spawnattr_init(&attr))) {
        posix_spawn_file_actions_destroy(&actions);
        return rc;
    }
    if (!rc) rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
    if (!rc) rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (!rc && cwd) rc = posix_spawn_file_actions_addchdir_np(&actions, cwd);
    if (!rc) rc = child_attributes(&attr);
    if (!rc) rc = posix_spawn(pid, exe, &actions, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

ssize_t cvhost_send_message(int sock, const void *buf, size_t len, const int *fds, int nfds) {
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    union {
        char bytes[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        if (nfds > 4) return -EINVAL;
        memset(&control, 0, sizeof control);
        msg.msg_control = control.bytes;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    return n >= 0 ? n : -errno;
}

ssize_t cvhost_receive_message(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds, int timeout_ms) {
    if (nfds) *nfds = 0;
    struct pollfd p = {.fd = sock, .events = POLLIN};
    int r = poll(&p, 1, timeout_ms);
    if (r == 0) return -ETIMEDOUT;
    if (r < 0) return -errno;
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    union {
        char bytes[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.bytes, .msg_controllen = sizeof control.bytes};
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) return -errno;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int got[4];
        if (count > 4) count = 4;
        memcpy(got, CMSG_DATA(c), sizeof(int) * count);
        for (int i = 0; i < count; i++) {
            if (fds && nfds && *nfds < maxfds) fds[(*nfds)++] = got[i];
            else close(got[i]);
        }
    }
    if (msg.msg_flags & MSG_TRUNC) return -EMSGSIZE;
    return n;
}

int cvhost_worker_restrict(pid_t parent) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return errno;
    // cvhost may have died between the spawn and the line above: then nobody would kill us.
    if (getppid() != parent) return ESRCH;
    return 0;
}

int cvhost_become_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : errno;
}
