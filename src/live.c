/* live.c -- the objects gko has handed out and not yet destroyed (handles,
 * descriptors, CSR descriptors, plans): an open-addressing hash set of
 * their addresses and kinds under a sharded reader-writer lock.  Every entry
 * point looks its object arguments up here before reading them, and a
 * destroy frees only an object found here, so a destroyed or foreign object
 * is a status, never a read of freed memory or a double free.  Each thread
 * remembers its recent answers, valid until the next removal anywhere
 * (g_gen): lookups from many threads then share no written cache line. */
#define _GNU_SOURCE /* PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "core.h"

typedef struct {
  uintptr_t key; /* 0: empty */
  int kind;
} gk_slot;

/* The table's lock, in shards: a lookup takes the read lock of its key's
 * shard, a change takes every shard's write lock (in order), so readers of
 * different objects share no lock's cache line.  Writers first, so that
 * lookups cannot starve creates and destroys. */
enum { GK_SHARDS = 16 };
static struct {
  pthread_rwlock_t l;
  char pad[128 - sizeof(pthread_rwlock_t)];
} g_shard[GK_SHARDS] = {
#define GK_SHARD_INIT {PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP, {0}}
    GK_SHARD_INIT, GK_SHARD_INIT, GK_SHARD_INIT, GK_SHARD_INIT, GK_SHARD_INIT, GK_SHARD_INIT,
    GK_SHARD_INIT, GK_SHARD_INIT, GK_SHARD_INIT, GK_SHARD_INIT, GK_SHARD_INIT, GK_SHARD_INIT,
    GK_SHARD_INIT, GK_SHARD_INIT, GK_SHARD_INIT, GK_SHARD_INIT};
#undef GK_SHARD_INIT

/* one of n (a power of two) from the product's high bits, which depend on
 * every bit of the address */
static size_t gk_pick(uintptr_t k, size_t n) {
  return (size_t)(((k >> 4) * 0x9E3779B97F4A7C15ull) >> 40) & (n - 1);
}

static void gk_write_lock(void) {
  for (int i = 0; i < GK_SHARDS; i++) pthread_rwlock_wrlock(&g_shard[i].l);
}
static void gk_write_unlock(void) {
  for (int i = GK_SHARDS - 1; i >= 0; i--) pthread_rwlock_unlock(&g_shard[i].l);
}
static gk_slot *g_tab;
static size_t g_cap, g_used; /* g_cap a power of two, or 0 */
static unsigned long g_gen;  /* removals so far */

/* a thread's recent positive answers, tagged with g_gen when they were found */
enum { GK_MEMO = 64 };
typedef struct {
  uintptr_t key;
  int kind;
  unsigned long gen;
} gk_memo;
static __thread gk_memo t_memo[GK_MEMO];

static size_t gk_hash(uintptr_t k, size_t cap) {
  return (size_t)((k >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

static void gk_place(gk_slot *tab, size_t cap, uintptr_t key, int kind) {
  size_t i = gk_hash(key, cap);
  while (tab[i].key) i = (i + 1) & (cap - 1);
  tab[i].key = key, tab[i].kind = kind;
}

/* index of key, or g_cap when absent; under a shard's lock */
static size_t gk_find(uintptr_t key) {
  if (!g_cap) return 0;
  for (size_t i = gk_hash(key, g_cap);; i = (i + 1) & (g_cap - 1)) {
    if (g_tab[i].key == key) return i;
    if (!g_tab[i].key) return g_cap;
  }
}

gko_status_t gk_live_add(const void *p, int kind) {
  gk_write_lock();
  if (2 * (g_used + 1) > g_cap) { /* at most half full */
    const size_t cap = g_cap ? 2 * g_cap : 64;
    gk_slot *tab = calloc(cap, sizeof *tab);
    if (!tab) {
      gk_write_unlock();
      return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of gko's table of live objects failed");
    }
    for (size_t i = 0; i < g_cap; i++)
      if (g_tab[i].key) gk_place(tab, cap, g_tab[i].key, g_tab[i].kind);
    free(g_tab);
    g_tab = tab, g_cap = cap;
  }
  gk_place(g_tab, g_cap, (uintptr_t)p, kind);
  g_used++;
  gk_write_unlock();
  return GKO_STATUS_SUCCESS;
}

int gk_live_remove(const void *p, int kind) {
  gk_write_lock();
  size_t i = gk_find((uintptr_t)p);
  const int found = i < g_cap && g_tab[i].kind == kind;
  if (found) { /* backward-shift deletion keeps every probe chain whole */
    g_tab[i].key = 0;
    g_used--;
    __atomic_add_fetch(&g_gen, 1, __ATOMIC_RELEASE); /* before the caller frees p */
    for (size_t j = (i + 1) & (g_cap - 1); g_tab[j].key; j = (j + 1) & (g_cap - 1)) {
      const size_t home = gk_hash(g_tab[j].key, g_cap);
      /* move j into the hole at i when its home is not in (i, j] (cyclically) */
      if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
        g_tab[i] = g_tab[j];
        g_tab[j].key = 0;
        i = j;
      }
    }
  }
  gk_write_unlock();
  return found;
}

/* the kind p is registered with, 0 when it is not */
static int gk_live_kind(const void *p) {
  const uintptr_t key = (uintptr_t)p;
  const unsigned long gen = __atomic_load_n(&g_gen, __ATOMIC_ACQUIRE);
  gk_memo *m = &t_memo[gk_pick(key, GK_MEMO)];
  if (m->key == key && m->gen == gen) return m->kind;
  pthread_rwlock_t *l = &g_shard[gk_pick(key, GK_SHARDS)].l;
  pthread_rwlock_rdlock(l);
  const size_t i = gk_find(key);
  const int kind = i < g_cap ? g_tab[i].kind : 0;
  pthread_rwlock_unlock(l);
  /* gen was read before the lookup: a removal since makes this memo stale */
  if (kind) m->key = key, m->kind = kind, m->gen = gen;
  return kind;
}

static const char *const kTypeName[] = {
    [GK_LIVE_HANDLE] = "gko_handle_t",       [GK_LIVE_GEMM_DESC] = "gko_gemm_desc_t",
    [GK_LIVE_GEMM_PLAN] = "gko_gemm_plan_t", [GK_LIVE_CONV_DESC] = "gko_conv_desc_t",
    [GK_LIVE_CONV_PLAN] = "gko_conv_plan_t", [GK_LIVE_POOL_DESC] = "gko_pool_desc_t",
    [GK_LIVE_CSR] = "gko_csr_t",             [GK_LIVE_SPMM_PLAN] = "gko_spmm_plan_t"};

/* INVALID_HANDLE for p (not NULL), registered with `found` instead of kind */
static gko_status_t gk_dead(const void *p, int kind, int found, const char *name,
                            const char *tail) {
  if (found)
    return gk_fail(GKO_STATUS_INVALID_HANDLE, "%s %p is a %s, not a %s%s", name, p,
                   kTypeName[found], kTypeName[kind], tail);
  return gk_fail(GKO_STATUS_INVALID_HANDLE,
                 "%s %p is not a live %s: destroyed already, or never returned by gko%s", name,
                 p, kTypeName[kind], tail);
}

gko_status_t gk_live_check(const void *p, int kind, const char *name) {
  if (!p) return gk_fail(GKO_STATUS_INVALID_VALUE, "%s is NULL", name);
  const int found = gk_live_kind(p);
  return found == kind ? GKO_STATUS_SUCCESS : gk_dead(p, kind, found, name, "");
}

gko_status_t gk_live_plan_handle(gko_handle_t h, unsigned long serial) {
  const int found = gk_live_kind(h);
  if (found == GK_LIVE_HANDLE && h->serial == serial) return GKO_STATUS_SUCCESS;
  return gk_fail(GKO_STATUS_INVALID_HANDLE,
                 "the plan's handle %p was destroyed (the plan must not outlive it): the "
                 "plan can still be queried and destroyed", (const void *)h);
}

gko_status_t gk_live_destroy(void *p, int kind, const char *name, void (*release)(void *)) {
  gk_clear_error();
  if (!p) return GKO_STATUS_SUCCESS;
  if (!gk_live_remove(p, kind)) return gk_dead(p, kind, gk_live_kind(p), name, ": nothing was freed");
  release(p);
  gk_clear_error();
  return GKO_STATUS_SUCCESS;
}
