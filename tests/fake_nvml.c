/* fake_nvml.c -- a stand-in libnvidia-ml.so.1 for tests/bench_power_check.sh:
 * exports the seven NVML functions gko-bench's --power loads, with readings
 * that change on every call, and counts what it handed out so that the
 * check can recompute the averages the sampler must report.  Host only; no
 * GPU, no driver.
 *
 * Behaviour switches (environment):
 *   FAKE_NVML_INIT=N         nvmlInit_v2 returns N (e.g. 9, driver not loaded)
 *   FAKE_NVML_NO_CLOCK=1     nvmlDeviceGetClockInfo returns 3 (not supported)
 *   FAKE_NVML_SLOW_US=N      every power read takes N microseconds
 * Built with -DFAKE_NVML_OMIT_POWER it lacks nvmlDeviceGetPowerUsage (an
 * NVML too old for gko-bench).
 *
 * The only GPU it knows is at PCI 0000:41:00.0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
struct nvmlDevice_st {
  int unused;
};
static struct nvmlDevice_st g_dev;

static int g_init;
static long g_power_calls, g_clock_calls, g_mem_calls;
static double g_power_sum_mw, g_clock_sum_mhz;
static unsigned long long g_mem_max;

/* read by the check through dlsym */
void fake_nvml_stats(long *power_n, double *power_sum_mw, long *clock_n, double *clock_sum_mhz,
                     long *mem_n, unsigned long long *mem_max) {
  *power_n = g_power_calls;
  *power_sum_mw = g_power_sum_mw;
  *clock_n = g_clock_calls;
  *clock_sum_mhz = g_clock_sum_mhz;
  *mem_n = g_mem_calls;
  *mem_max = g_mem_max;
}

void fake_nvml_reset(void) {
  g_power_calls = g_clock_calls = g_mem_calls = 0;
  g_power_sum_mw = g_clock_sum_mhz = 0;
  g_mem_max = 0;
}

int nvmlInit_v2(void) {
  const char *e = getenv("FAKE_NVML_INIT");
  if (e && atoi(e)) return atoi(e);
  g_init++;
  return 0;
}

int nvmlShutdown(void) {
  if (!g_init) return 1; /* NVML_ERROR_UNINITIALIZED */
  g_init--;
  return 0;
}

const char *nvmlErrorString(int r) {
  switch (r) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 6: return "Not Found";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *dev) {
  unsigned dom, b, d, f;
  if (!g_init) return 1;
  if (!bus || !dev) return 2;
  if (sscanf(bus, "%x:%x:%x.%x", &dom, &b, &d, &f) != 4) return 2;
  if (dom != 0 || b != 0x41 || d != 0 || f != 0) return 6; /* NVML_ERROR_NOT_FOUND */
  *dev = &g_dev;
  return 0;
}

#ifndef FAKE_NVML_OMIT_POWER
int nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *mw) {
  if (!g_init) return 1;
  if (dev != &g_dev || !mw) return 2;
  const char *slow = getenv("FAKE_NVML_SLOW_US");
  if (slow && atoi(slow) > 0) {
    struct timespec t = {0, atoi(slow) * 1000L};
    nanosleep(&t, NULL);
  }
  *mw = 300000u + 1000u * (unsigned)(g_power_calls % 11); /* 300.000 .. 310.000 W */
  g_power_calls++;
  g_power_sum_mw += *mw;
  return 0;
}
#endif

int nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz) {
  if (!g_init) return 1;
  if (dev != &g_dev || !mhz || type != 1 /* NVML_CLOCK_SM */) return 2;
  if (getenv("FAKE_NVML_NO_CLOCK")) return 3;
  *mhz = 1980u - 15u * (unsigned)(g_clock_calls % 5);
  g_clock_calls++;
  g_clock_sum_mhz += *mhz;
  return 0;
}

int nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m) {
  if (!g_init) return 1;
  if (dev != &g_dev || !m) return 2;
  m->total = 141ull << 30;
  m->used = (1ull << 30) + (unsigned long long)g_mem_calls * (1ull << 20);
  m->free = m->total - m->used;
  g_mem_calls++;
  if (m->used > g_mem_max) g_mem_max = m->used;
  return 0;
}
