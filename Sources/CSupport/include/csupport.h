#pragma once
/// Names the calling thread (15 bytes at most are kept). pthread_setname_np needs _GNU_SOURCE,
/// which Swift's Glibc module does not expose.
void gb_set_thread_name(const char *name);
/// The calling thread's kernel id (for /proc/self/task/<tid>).
int gb_thread_id(void);
/// A non-blocking, close-on-exec eventfd (sys/eventfd.h is not in Swift's Glibc module).
int gb_eventfd(void);
/// prctl(PR_SET_DUMPABLE, 0): no core dump of this process (it holds the stream password) and no
/// ptrace attach by other processes of the same user. prctl is variadic, which Swift cannot
/// call. Returns 0, or the errno.
int gb_forbid_core_dumps(void);
