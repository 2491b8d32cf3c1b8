#include "server/kv_event_wire.h"

#include <msgpack.hpp>

#include <string_view>

namespace folio::server {

namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void pack_str(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

void pack_hashes(Packer& pk, std::span<const cache::BlockHash> hashes) {
  pk.pack_array(static_cast<uint32_t>(hashes.size()));
  for (const cache::BlockHash& h : hashes) pk.pack_uint64(wire_block_hash(h));
}

void pack_event(Packer& pk, const cache::KvEvent& e, int32_t block_size) {
  switch (e.kind) {
    case cache::KvEvent::Kind::kStored:
      pk.pack_map(8);
      pack_str(pk, "type");
      pack_str(pk, "BlockStored");
      pack_str(pk, "block_hashes");
      pack_hashes(pk, e.hashes);
      pack_str(pk, "parent_block_hash");
      if (e.has_parent) {
        pk.pack_uint64(wire_block_hash(e.parent));
      } else {
        pk.pack_nil();
      }
      pack_str(pk, "token_ids");
      pk.pack_array(static_cast<uint32_t>(e.tokens.size()));
      for (int32_t t : e.tokens) pk.pack_uint32(static_cast<uint32_t>(t));
      pack_str(pk, "block_size");
      pk.pack_int32(block_size);
      pack_str(pk, "lora_id");
      pk.pack_nil();
      pack_str(pk, "medium");
      pack_str(pk, "GPU");
      pack_str(pk, "lora_name");
      pk.pack_nil();
      return;
    case cache::KvEvent::Kind::kRemoved:
      pk.pack_map(3);
      pack_str(pk, "type");
      pack_str(pk, "BlockRemoved");
      pack_str(pk, "block_hashes");
      pack_hashes(pk, e.hashes);
      pack_str(pk, "medium");
      pack_str(pk, "GPU");
      return;
    case cache::KvEvent::Kind::kAllCleared:
      pk.pack_map(1);
      pack_str(pk, "type");
      pack_str(pk, "AllBlocksCleared");
      return;
  }
}

}  // namespace

uint64_t wire_block_hash(const cache::BlockHash& h) { return h.lo; }

std::string encode_kv_event_batch(double ts, std::span<const cache::KvEvent> events,
                                  int32_t block_size) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_array(3);
  pk.pack_double(ts);
  pk.pack_array(static_cast<uint32_t>(events.size()));
  for (const cache::KvEvent& e : events) pack_event(pk, e, block_size);
  pk.pack_int32(0);
  return std::string(buf.data(), buf.size());
}

}  // namespace folio::server
