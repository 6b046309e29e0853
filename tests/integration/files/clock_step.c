/* A step of the wall clock for one test host, as NTP or `date -s` makes it, without stepping
 * the machine's clock, which the other test hosts and beds share. Listed in the test host's
 * /etc/ld.so.preload, it adds the seconds written in /etc/refit-test-clock-step (signed; none
 * when the file is absent) to CLOCK_REALTIME for every dynamically linked process started on
 * that host, refit's modules included. Every other clock is left as the kernel keeps it:
 * CLOCK_BOOTTIME, which a run's heartbeat is measured on, cannot be stepped, and that is what
 * test_lease_clock_step.yml shows. The file is read at each call, so the step takes effect at
 * once, as a real one does. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long step_seconds(void)
{
    char buf[32];
    int fd = open("/etc/refit-test-clock-step", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (!real)
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
        ts->tv_sec += step_seconds();
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    static int (*real)(struct timeval *restrict, void *restrict);
    if (!real)
        real = (int (*)(struct timeval *restrict, void *restrict))dlsym(RTLD_NEXT, "gettimeofday");
    int rc = real(tv, tz);
    if (rc == 0)
        tv->tv_sec += step_seconds();
    return rc;
}

time_t time(time_t *out)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (out)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
