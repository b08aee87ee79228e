/* spmm.h -- the sparse area (src/csr.c, src/spmm.c): the kernels'
 * interface (the CSR descriptor, validation, SpMM launches) and the SpMM
 * plan model shared with the host-only tests. */
#ifndef GK_SPMM_H
#define GK_SPMM_H

#include "core.h"
#include "../kernels/sparse.h"
#include "../kernels/spmm_model.h"

#endif /* GK_SPMM_H */
