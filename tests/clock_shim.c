/* A wall-clock-only LD_PRELOAD shim for the clock tests.
 *
 * Adds an offset (seconds, a decimal) to CLOCK_REALTIME and CLOCK_REALTIME_COARSE,
 * gettimeofday() and time(); the monotonic clocks are left alone, so sleeps, timeouts
 * and the scheduler's deadlines behave (libfaketime shifts those too, and time.sleep
 * then misbehaves). The offset is CLOCK_SHIM_OFFSET, or the contents of the file
 * named by CLOCK_SHIM_FILE, read again at most every 20 ms so that a test can step the
 * clock of a running process by rewriting the file. Unset or empty: no offset.
 *
 * Built by the tests: gcc -shared -fPIC -O2 -o clock_shim.so clock_shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime(void) {
    static clock_gettime_fn real;
    clock_gettime_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

static long long offset_ns_from(const char *text) {
    if (!text || !*text) return 0;
    return (long long)(strtod(text, NULL) * 1e9);
}

static long long offset_ns(void) {
    static long long cached;  /* nanoseconds */
    static long long read_at; /* monotonic nanoseconds of the last read; 0: never */
    const char *fixed = getenv("CLOCK_SHIM_OFFSET");
    if (fixed && *fixed) return offset_ns_from(fixed);
    const char *path = getenv("CLOCK_SHIM_FILE");
    if (!path || !*path) return 0;
    struct timespec mono;
    real_clock_gettime()(CLOCK_MONOTONIC, &mono);
    long long now = (long long)mono.tv_sec * 1000000000LL + mono.tv_nsec;
    long long last = __atomic_load_n(&read_at, __ATOMIC_ACQUIRE);
    if (last && now - last < 20000000LL) return __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    char buf[64];
    ssize_t n = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
    }
    long long value = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (n > 0) {  /* a file being rewritten (empty for a moment) keeps the last value */
        buf[n] = '\0';
        value = offset_ns_from(buf);
    }
    __atomic_store_n(&cached, value, __ATOMIC_RELEASE);
    __atomic_store_n(&read_at, now, __ATOMIC_RELEASE);
    return value;
}

static void shift(struct timespec *ts) {
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns();
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
    if (ts->tv_nsec < 0) {
        ts->tv_nsec += 1000000000L;
        ts->tv_sec -= 1;
    }
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    int rc = real_clock_gettime()(clk, ts);
    if (rc == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) shift(ts);
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
    struct timespec ts;
    (void)tz;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
