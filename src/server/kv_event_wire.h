// The KV-cache events' wire format: vLLM's KVEventBatch in msgpack, as its
// ZMQ publisher sends it and routers built for vLLM decode it (vllm-router's
// kv_aware policy, among others):
//   [ts: float64 (Unix seconds), [event, ...], data_parallel_rank: 0]
// with each event a map whose "type" key comes first:
//   {"type": "BlockStored", "block_hashes": [h, ...], "parent_block_hash": h | nil,
//    "token_ids": [t, ...] (block_size per hash), "block_size": n,
//    "lora_id": nil, "medium": "GPU", "lora_name": nil}
//   {"type": "BlockRemoved", "block_hashes": [h, ...], "medium": "GPU"}
//   {"type": "AllBlocksCleared"}
// Every listed key is present (routers reject a batch missing one) and no
// other key is (they reject unknown keys too). A hash h is the low 64 bits of
// folio's 128-bit chain hash (cache/block_hash.h) as an unsigned integer,
// vLLM's default form: it names a block's whole prefix, so equal values from
// two replicas mean equal prefixes. Routers match requests by the token ids
// and use the hashes only to chain continuations (parent) and to find what
// is removed.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "cache/kv_events.h"

namespace folio::server {

// The 64-bit form of a block hash on the wire.
uint64_t wire_block_hash(const cache::BlockHash& h);

// One batch: the msgpack bytes of [ts, events, 0].
std::string encode_kv_event_batch(double ts, std::span<const cache::KvEvent> events,
                                  int32_t block_size);

}  // namespace folio::server
