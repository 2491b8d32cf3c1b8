// Host/shader interface of argsort.comp (top_k and argsort; ops_sort.cc):
// the binding-0 parameter struct (interface.h says how the file serves both
// languages). The workgroup size, the padded row length N and the order
// are spec constants.
#ifndef FOLIO_VK_SORT_INTERFACE_H
#define FOLIO_VK_SORT_INTERFACE_H

#include "interface.h"

FOLIO_VK_NAMESPACE_BEGIN

// Binding 0 of argsort.comp: x F32 [n, rows...]; d I32 [k, rows...] (rows
// pair by flat index); k the indices kept per row (argsort: n).
#define FOLIO_VK_SORT_PARAMS \
  FOLIO_VK_TENSOR x;         \
  FOLIO_VK_TENSOR d;         \
  FOLIO_VK_UINT k;

FOLIO_VK_NAMESPACE_END

#endif  // FOLIO_VK_SORT_INTERFACE_H
