// POST /v1/embeddings (OpenAI's shape):
//   {"input": string | [string] | [int] | [[int]], "model"?,
//    "encoding_format"?: "float" | "base64", "dimensions"?, "user"?}
//   -> {"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
//       "model", "usage": {"prompt_tokens", "total_tokens"}}
// Vectors are pooled as the model says (mean, CLS, last) and L2-normalised,
// as llama-server's /v1/embeddings returns them; base64 is the float32
// vector's little-endian bytes (what the openai client asks for by default).
#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "engine/embedder.h"
#include "server/routes.h"

namespace folio::server {

namespace {

constexpr size_t kMaxInputs = 2048;  // OpenAI's limit on inputs per request

std::string base64_floats(const std::vector<float>& v) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u = std::bit_cast<uint32_t>(v[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((u >> (8 * b)) & 0xff);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (i + 1 < bytes.size() ? static_cast<uint8_t>(bytes[i + 1]) << 8 : 0) |
                       (i + 2 < bytes.size() ? static_cast<uint8_t>(bytes[i + 2]) : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

bool token_list(const Json& j, const ServedModel& m, std::vector<int32_t>* out, ApiError* err) {
  for (const Json& t : j) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
        t.get<int64_t>() >= m.tokenizer->vocab().size()) {
      *err = bad_request(fmt::format("input token {} is outside the vocabulary [0, {})",
                                     dump_json(t), m.tokenizer->vocab().size()),
                         "input");
      return false;
    }
    out->push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return true;
}

// input -> token sequences.
bool read_inputs(const Json& input, const ServedModel& m, std::vector<std::vector<int32_t>>* out,
                 ApiError* err) {
  auto fail = [&](std::string msg) {
    *err = bad_request(std::move(msg), "input");
    return false;
  };
  if (input.is_string()) {
    out->push_back(m.embedder->tokenize(input.get<std::string>()));
    return true;
  }
  if (!input.is_array() || input.empty()) {
    return fail("'input' must be a string, a list of strings, a list of token ids or a list of "
                "lists of token ids (not empty)");
  }
  if (input.size() > kMaxInputs) {
    return fail(fmt::format("'input' has {} items; at most {} per request", input.size(),
                            kMaxInputs));
  }
  if (input[0].is_number()) {  // one list of token ids
    out->emplace_back();
    return token_list(input, m, &out->back(), err);
  }
  for (const Json& item : input) {
    if (item.is_string()) {
      out->push_back(m.embedder->tokenize(item.get<std::string>()));
    } else if (item.is_array()) {
      out->emplace_back();
      if (!token_list(item, m, &out->back(), err)) return false;
    } else {
      return fail("every item of 'input' must be a string or a list of token ids");
    }
  }
  return true;
}

}  // namespace

HttpReply handle_embeddings(const ServedModel& m, const std::string& body) {
  if (m.embedder == nullptr) {
    return bad_request(fmt::format("the model '{}' is not an embedding model (it generates "
                                   "text); /v1/embeddings needs one such as BERT",
                                   m.id),
                       "model")
        .reply();
  }
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return err.reply();
  if (!j.is_object()) return bad_request("the request body must be a JSON object").reply();
  if (auto model = j.find("model"); model != j.end() && !model->is_null()) {
    if (!model->is_string()) return bad_request("'model' must be a string", "model").reply();
    if (model->get<std::string>() != m.id) {
      return not_found_error(fmt::format("The model '{}' does not exist; this server serves '{}'",
                                         model->get<std::string>(), m.id),
                             "model_not_found")
          .reply();
    }
  }
  bool base64 = false;
  if (auto f = j.find("encoding_format"); f != j.end() && !f->is_null()) {
    if (!f->is_string() || (*f != "float" && *f != "base64")) {
      return bad_request("'encoding_format' must be 'float' or 'base64'", "encoding_format").reply();
    }
    base64 = *f == "base64";
  }
  if (auto d = j.find("dimensions"); d != j.end() && !d->is_null()) {
    if (!d->is_number_integer() || d->get<int64_t>() != m.embedder->n_embd()) {
      return bad_request(fmt::format("'dimensions' must be the model's {} (no truncation)",
                                     m.embedder->n_embd()),
                         "dimensions")
          .reply();
    }
  }
  if (m.embedder->pooling() == model::PoolingType::kNone) {
    return bad_request("this model has no pooling (one vector per token); /v1/embeddings returns "
                       "one vector per input")
        .reply();
  }
  auto input = j.find("input");
  if (input == j.end()) return bad_request("'input' is required", "input").reply();
  std::vector<std::vector<int32_t>> inputs;
  if (!read_inputs(*input, m, &inputs, &err)) return err.reply();

  int64_t n_tokens = 0;
  Result<std::vector<std::vector<float>>> vecs =
      m.embedder->embed(inputs, /*normalize=*/true, &n_tokens);
  if (!vecs.ok()) return api_error_from_status(vecs.status(), "input").reply();

  Json data = Json::array();
  for (size_t i = 0; i < vecs->size(); ++i) {
    Json e = Json::object();
    e["object"] = "embedding";
    e["index"] = i;
    if (base64) {
      e["embedding"] = base64_floats((*vecs)[i]);
    } else {
      e["embedding"] = (*vecs)[i];
    }
    data.push_back(std::move(e));
  }
  Json out = Json::object();
  out["object"] = "list";
  out["data"] = std::move(data);
  out["model"] = m.id;
  out["usage"] = Json{{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}};
  return json_reply(200, out);
}

}  // namespace folio::server
