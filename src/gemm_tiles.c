/* gemm_tiles.c -- readable names of cuBLASLt tile ids (cublasLtMatmulTile_t)
 * for the plan's account.  The enum in cublasLt.h (CUDA 13) follows a rule,
 * which this file spells out instead of listing its 634 names: 35 tiles
 * listed by hand (kFirst), then, in order of rows and then columns, each
 * tile not listed before of
 *   - rows a multiple of 8, columns a multiple of 64, both up to 768 and
 *     rows x columns up to 48 Ki elements;
 *   - rows a multiple of 64 up to 768, columns a multiple of 8 up to 768,
 *     rows x columns up to 64 Ki elements;
 * then four large ones (kLast).  Ids only grow between versions; an id
 * beyond these prints as a number. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "gemm.h"

static const uint16_t kFirst[][2] = {
    {8, 8},     {8, 16},   {16, 8},   {8, 32},    {16, 16},  {32, 8},    {8, 64},   {16, 32},
    {32, 16},   {64, 8},   {32, 32},  {32, 64},   {64, 32},  {32, 128},  {64, 64},  {128, 32},
    {64, 128},  {128, 64}, {64, 256}, {128, 128}, {256, 64}, {64, 512},  {128, 256}, {256, 128},
    {512, 64},  {64, 96},  {96, 64},  {96, 128},  {128, 160}, {160, 128}, {192, 128}, {128, 192},
    {128, 96},  {32, 256}, {256, 32}};
static const uint16_t kLast[][2] = {{256, 512}, {256, 1024}, {512, 512}, {512, 1024}};

enum { GK_NTILES = 635 }; /* ids 1..634; 0 is CUBLASLT_MATMUL_TILE_UNDEFINED */
static char g_name[GK_NTILES][12];
static int g_count; /* ids named */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int gk_first(int r, int c) {
  for (size_t i = 0; i < sizeof kFirst / sizeof kFirst[0]; i++)
    if (kFirst[i][0] == r && kFirst[i][1] == c) return 1;
  return 0;
}

static void gk_name(int r, int c) {
  if (++g_count < GK_NTILES) snprintf(g_name[g_count], sizeof g_name[0], "%dx%d", r, c);
}

static void gk_tiles_init(void) {
  for (size_t i = 0; i < sizeof kFirst / sizeof kFirst[0]; i++) gk_name(kFirst[i][0], kFirst[i][1]);
  for (int r = 8; r <= 768; r += 8)
    for (int c = 64; c <= 768; c += 64)
      if (r * c <= 48 * 1024 && !gk_first(r, c)) gk_name(r, c);
  for (int r = 64; r <= 768; r += 64)
    for (int c = 8; c <= 768; c += 8)
      if (r * c <= 64 * 1024 && !gk_first(r, c) && !(c % 64 == 0 && r * c <= 48 * 1024))
        gk_name(r, c);
  for (size_t i = 0; i < sizeof kLast / sizeof kLast[0]; i++) gk_name(kLast[i][0], kLast[i][1]);
}

const char *gk_gemm_tile_name(int id) {
  pthread_once(&g_once, gk_tiles_init);
  if (id <= 0 || id >= GK_NTILES || id > g_count) return NULL;
  return g_name[id];
}
