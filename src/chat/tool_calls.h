// Tool calls in a model's output: which format a chat template teaches the
// model, and an incremental parser that splits generated text into content
// and OpenAI tool calls, for streamed deltas and whole answers alike.
//
// Formats (what the model writes):
//   hermes   <tool_call>{"name": N, "arguments": {...}}</tool_call>, any
//            number, between content (Hermes, Qwen 2.5 / 3, many fine-tunes)
//   qwen_xml <tool_call><function=N><parameter=P>value</parameter>...
//            </function></tool_call> (Qwen3-Coder, Qwen 3.5): a value is
//            kept as a string where the tool's schema says string, else
//            read as JSON when it is JSON
//   seed     qwen_xml's <function=N>... between <seed:tool_call> and
//            </seed:tool_call> (Seed-OSS; its template writes the values
//            without the newlines around them)
//   llama3   the whole answer is JSON: {"name": N, "parameters": {...}}
//            (or "arguments"), optionally after <|python_tag|>, several
//            separated by ';' (Llama 3.1 / 3.2 / 3.3 custom tools)
//   mistral  content, then [TOOL_CALLS] and either a JSON list of {"name",
//            "arguments", "id"?} or name[ARGS]{...} (repeated, each after
//            [TOOL_CALLS]; [CALL_ID]id before [ARGS] is accepted)
//   glm      <tool_call>N<arg_key>k</arg_key><arg_value>v</arg_value>...
//            </tool_call> (GLM-4.5 / 4.6 / 4.7; whitespace between the parts
//            allowed): a value is kept as a string where the tool's schema
//            says string, else read as JSON when it is JSON
//   nemotron <TOOLCALL>[{"name": N, "arguments": {...}}, ...]</TOOLCALL>
//            between content (Nemotron Nano v2)
//   lfm2     <|tool_call_start|>[N(k=v, ...), ...]<|tool_call_end|> between
//            content, values Python literals ('str', 1.5, True, None,
//            [...], {...}) or JSON's (LFM2 / LFM2.5)
//   deepseek <｜tool▁calls▁begin｜> (<｜tool▁call▁begin｜>N<｜tool▁sep｜>{...}
//            <｜tool▁call▁end｜>)+ <｜tool▁calls▁end｜> (DeepSeek V3.1), or
//            R1 / V3's function<｜tool▁sep｜>N\n```json\n{...}\n``` calls
//   deepseek_v3_2  <｜DSML｜function_calls> (<｜DSML｜invoke name="N">
//            (<｜DSML｜parameter name="k" string="true|false">v
//            </｜DSML｜parameter>)* </｜DSML｜invoke>)+ </｜DSML｜function_calls>
//            (DeepSeek V3.2; values typed by the tool's schema as in minimax)
//   kimi     <|tool_calls_section_begin|> (<|tool_call_begin|>functions.N:I
//            <|tool_call_argument_begin|>{...}<|tool_call_end|>)+
//            <|tool_calls_section_end|> (Kimi K2; the id is functions.N:I)
//   minimax  <minimax:tool_call><invoke name="N"><parameter name="k">v
//            </parameter>...</invoke>...</minimax:tool_call> (MiniMax-M2;
//            values typed by the tool's schema as in qwen_xml)
//   command  <|START_ACTION|>[{"tool_call_id", "tool_name", "parameters"}]
//            <|END_ACTION|> (Command R7B; its <|START_RESPONSE|> /
//            <|END_RESPONSE|> around the answer are dropped)
//   functionary  <function=N>{...}</function> (Functionary v3.1: a Llama 3
//            template)
//   functionary_v3_2  RECIPIENT\nBODY messages separated by ">>>", the
//            reply opening with a recipient (the prompt ends with ">>>"):
//            "all" is content, any other recipient a call with a JSON
//            object body (Functionary v3.2; chat/recipient_calls.h)
//   gemma4   <|tool_call>call:N{k:v,...}<tool_call|> between content, the
//            values in Gemma 4's notation (strings between <|"|> quotes;
//            chat/gemma4_calls.h)
//   granite  content, then <|tool_call|>[{"name", "arguments"}, ...] to the end
//            (Granite 3.x; its <response> / </response> around the answer
//            are dropped)
//   phi4_mini  <|tool_call|>[{"name": N, "arguments": {...}}, ...]
//            <|/tool_call|> between content (a single call object is read
//            too; Phi-4-mini, whose template shows only <|tool|> ... <|/tool|>
//            around the tools: chat/phi4_tools.h)
//   generic  the whole answer is one JSON object (chat/generic_tools.h):
//            {"tool_call": {"name": N, "arguments": {...}}}, {"tool_calls":
//            [...]} or {"response": "text"}; the response string is streamed
//            as content as it is decoded. Every template that shows no tool
//            syntax folio knows gets it: the server describes the tools in
//            the prompt and constrains the reply by a grammar.
// A call that does not parse (bad JSON, no name) is not a call: its text
// goes out as content, so nothing the model wrote is lost.
//
// Streaming (ToolCallDelta): every call is also reported as deltas, the
// first with its name (and the model's id, if any), the rest pieces of its
// arguments; the pieces concatenate to exactly the completed call's
// arguments. hermes reports a call as soon as `{"name": N, "arguments": {`
// is read and then streams the arguments object as it is decoded (the raw
// JSON less the whitespace between tokens; the completed call's arguments
// are that text); functionary likewise once `N>{` is read (and Harmony,
// chat/chat_parser.h, once a call's body opens with '{'); qwen_xml, seed and glm
// once the function's name is read, each value as it arrives where the
// schema makes it a string, others as they close (chat/xml_call_stream.h).
// Once reported the call stays a call: if the model breaks off inside the
// arguments, the call ends with what was streamed. The other formats report
// a call in one delta when it completes.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace folio::chat {

class RecipientCallReader;
class XmlCallStream;

using Json = nlohmann::ordered_json;

enum class ToolCallFormat {
  kNone,
  kHermes,
  kQwenXml,
  kLlama3,
  kMistral,
  kGlm,
  kNemotron,
  kLfm2,
  kDeepSeek,
  kKimi,
  kMiniMax,
  kCommand,
  kFunctionary,
  kGranite,
  kFunctionaryV32,
  kGemma4,
  kDeepSeekV32,
  kPhi4Mini,
  kSeed,
  kGeneric
};

// The format a chat template's source renders tool calls in; kNone when it
// shows none folio knows (chat_format.h then picks kGeneric).
ToolCallFormat detect_tool_call_format(std::string_view template_source);
const char* tool_call_format_name(ToolCallFormat f);
// Whether the format's markers are control tokens the detokenizer hides
// unless asked to render them (mistral's [TOOL_CALLS], llama3's
// <|python_tag|>, GLM's <arg_key>, Nemotron's <TOOLCALL>, LFM2's
// <|tool_call_start|>, DeepSeek's, Kimi's, MiniMax's, Command's, Gemma 4's,
// DeepSeek V3.2's DSML tags and Phi-4-mini's <|tool_call|>).
bool tool_call_markers_are_special(ToolCallFormat f);

struct ParsedToolCall {
  std::string id;         // the model's own id when it wrote one, else ""
  std::string name;
  std::string arguments;  // JSON text of an object (OpenAI's wire format)
};

// One piece of a call for a stream (see above).
struct ToolCallDelta {
  size_t index = 0;       // the call's position among the reply's calls
  bool first = false;     // the call's first delta: name (and id) set
  std::string id;         // first delta: the model's own id, else ""
  std::string name;       // first delta: the function's name
  std::string arguments;  // the next piece of the arguments' JSON text
};

// A call's arguments streamed as the model writes them: the JSON value's
// text less the whitespace between its tokens, up to where the value
// closes; a UTF-8 character cut between feeds is held until its last byte.
class ToolCallArgsStream {
 public:
  // Reads `text` (the value's start first) up to where the value closes:
  // returns how many bytes it took and appends what is settled to *piece.
  size_t feed(std::string_view text, std::string* piece);
  // The end of the text: appends the bytes held to *piece.
  void flush(std::string* piece);
  bool done() const { return done_; }
  // Everything appended to the pieces so far.
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::string held_;  // an unfinished UTF-8 character
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  bool done_ = false;
};

class ToolCallParser {
 public:
  // `tools`: the request's tool definitions (OpenAI's [{"type":
  // "function", "function": {"name", "parameters"}}]), null if none; read
  // by qwen_xml for the parameters' types. Borrowed.
  explicit ToolCallParser(ToolCallFormat format, const Json* tools = nullptr)
      : format_(format), tools_(tools) {}

  // Feeds generated text: appends to *content what is now known to be
  // content and to *calls the calls completed. Text that may still turn
  // out to start a call is held back.
  void feed(std::string_view text, std::string* content, std::vector<ParsedToolCall>* calls);
  // The end of generation: what is held goes out (an unfinished call as
  // content).
  void finish(std::string* content, std::vector<ParsedToolCall>* calls);

  // Parses a whole answer at once.
  static void parse_all(ToolCallFormat format, const Json* tools, std::string_view text,
                        std::string* content, std::vector<ParsedToolCall>* calls);

  // Moves the deltas reported since the last call into *out (appended).
  void take_deltas(std::vector<ToolCallDelta>* out);

 private:
  enum class Mode { kContent, kUndecided, kCall, kCapture, kResponse, kAfterResponse };

  void feed_format(std::string* content, std::vector<ParsedToolCall>* calls);
  void finish_format(std::string* content, std::vector<ParsedToolCall>* calls);
  // Deltas for the calls completed in calls[from..] (one whole delta each,
  // except the call streamed since its name was read).
  void report_completed(const std::vector<ParsedToolCall>& calls, size_t from);
  // Reports the calls completed since the last report (calls_[feed_from_..]).
  void report_new_calls();
  // hermes, functionary: reports the call in buf_[0, limit) once its name
  // is read, and streams its arguments object as far as it is decoded;
  // qwen_xml, seed, glm: likewise through an XmlCallStream.
  void stream_call(size_t limit, bool at_end);
  void stream_xml_call(size_t limit, bool at_end);
  // Completes the call being streamed.
  void complete_streamed(std::vector<ParsedToolCall>* calls);
  void feed_tagged(std::string* content, std::vector<ParsedToolCall>* calls);
  bool parse_tagged_call(std::string_view body, std::vector<ParsedToolCall>* out) const;
  void feed_mistral(std::string* content);
  void feed_llama3(std::string* content);
  void feed_generic(std::string* content);
  // The tags around one call (or the call list) of a tagged format.
  struct TaggedMarkers {
    std::string_view open;
    std::string_view close;
  };
  TaggedMarkers tagged_markers() const;
  // Content out, less the format's own markup (Command R7B's and Granite's
  // response markers; a marker's partial tail held in hold_).
  void emit_content(std::string_view text, std::string* content);

  ToolCallFormat format_;
  const Json* tools_;
  Mode mode_ = Mode::kUndecided;
  std::string buf_;       // held-back text
  std::string hold_;      // content that may still be a markup marker
  size_t scan_from_ = 0;  // tagged calls: buf_ before this holds no close marker

  // Streaming (hermes, functionary): the call being streamed, if any.
  std::vector<ToolCallDelta> deltas_;
  size_t n_calls_ = 0;         // calls completed so far
  bool streaming_ = false;     // the current call has been reported
  bool no_stream_ = false;     // the current call's head did not match: parsed whole
  std::string stream_name_;
  size_t stream_index_ = 0;     // its index among the reply's calls
  std::vector<size_t> streamed_;  // streamed calls completed, not yet counted
  std::vector<ParsedToolCall>* calls_ = nullptr;  // during feed / finish: the caller's list
  size_t feed_from_ = 0;        // its size when the calls in it were last reported
  ToolCallArgsStream args_;
  size_t args_at_ = 0;         // buf_ offset of the next argument byte to stream
  std::shared_ptr<RecipientCallReader> recipients_;  // functionary_v3_2
  std::shared_ptr<XmlCallStream> xml_;               // qwen_xml, seed, glm: the current call
};

}  // namespace folio::chat
