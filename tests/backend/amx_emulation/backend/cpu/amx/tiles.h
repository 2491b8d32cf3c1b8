// Stands in for src/backend/cpu/amx/tiles.h in the folio_amx_emulated
// library (tests/CMakeLists.txt): the tile intrinsics become calls into
// tile_emulator.h, then the real tiles.h is included, whose helpers expand
// to those calls. Its namespace is renamed (amx -> amx_emulated) so that its
// inline helpers never merge with the real ones of folio_backend at link time.
#pragma once

#include <immintrin.h>

#include "tile_emulator.h"

#undef _tile_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbssd
#undef _tile_dpbsud
#undef _tile_dpbf16ps
#define _tile_loadconfig(cfg) ::folio::cpu::amx_emulation::load_config(cfg)
#define _tile_loadd(t, base, stride) ::folio::cpu::amx_emulation::load(t, base, stride)
#define _tile_stored(t, base, stride) ::folio::cpu::amx_emulation::store(t, base, stride)
#define _tile_zero(t) ::folio::cpu::amx_emulation::zero(t)
#define _tile_dpbssd(c, a, b) ::folio::cpu::amx_emulation::dpbssd(c, a, b)
#define _tile_dpbsud(c, a, b) ::folio::cpu::amx_emulation::dpbssd<true>(c, a, b)
#define _tile_dpbf16ps(c, a, b) ::folio::cpu::amx_emulation::dpbf16ps(c, a, b)
#define _tile_release() ::folio::cpu::amx_emulation::release()
#define amx amx_emulated

#include_next "backend/cpu/amx/tiles.h"
