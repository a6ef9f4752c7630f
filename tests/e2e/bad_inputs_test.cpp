// Broken model inputs through the built binary: `run`, `chat` and `inspect` on
// missing, empty, truncated, garbage-weight, tokenizer-less and vocabulary-only
// GGUF files and on HF directories with a broken config, weights or tokenizer.
// Each must end with one clear error line and exit code 1: never a crash, a
// hang, or tokens sampled from garbage.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "format/gguf.h"

namespace og::e2e {
namespace {

namespace fs = std::filesystem;
const std::string kGguf = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
const std::string kHf = std::string(OG_TESTDATA_DIR) + "/models/stories260K-hf";

struct BadModel {
  std::string what;     // the case, for failure messages
  std::string path;     // the broken model
  std::string message;  // a part of the error line
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A scratch copy of the stories260K HF directory whose config.json is `config`
// ("" keeps the original) and without the files in `drop`.
std::string hf_copy(const std::string& name, const std::string& config, const std::vector<std::string>& drop = {}) {
  const std::string dir = scratch_dir() + "/" + name;
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kHf)) {
    const std::string file = e.path().filename().string();
    if (std::find(drop.begin(), drop.end(), file) != drop.end()) continue;
    if (file == "config.json" && !config.empty()) write_file(dir + "/" + file, config);
    else fs::copy_file(e.path(), dir + "/" + file, fs::copy_options::overwrite_existing);
  }
  return dir;
}

// The stories260K config with `edit` applied.
std::string edited_config(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json c = nlohmann::json::parse(slurp(kHf + "/config.json"));
  edit(c);
  return c.dump();
}

std::vector<BadModel> gguf_cases() {
  const std::string bytes = slurp(kGguf);
  const size_t data = GgufFile::open(kGguf)->data_offset();
  std::vector<BadModel> v;
  auto add = [&](const std::string& what, const std::string& content, const std::string& message) {
    const std::string path = scratch_dir() + "/" + what + ".gguf";
    write_file(path, content);
    v.push_back({what, path, message});
  };
  v.push_back({"missing", scratch_dir() + "/no-such.gguf", "no such file or directory"});
  add("empty", "", "too small to be a GGUF file (0 bytes");
  add("not-gguf", std::string(100, 'x'), "GGUF");
  // Truncations: inside the header, the metadata, the tensor infos, the data.
  for (size_t at : {size_t{10}, size_t{30}, size_t{3000}, data - 100, data + 1000, bytes.size() - 1})
    add("truncated-" + std::to_string(at), bytes.substr(0, at), "");
  // Weights all NaN: a clear error instead of sampled garbage.
  std::string nan = bytes;
  const float q = std::numeric_limits<float>::quiet_NaN();
  for (size_t at = data; at + 4 <= nan.size(); at += 4) std::memcpy(&nan[at], &q, 4);
  add("nan-weights", nan, "non-finite logit (NaN or inf)");
  // The tokenizer keys renamed (same length, so the file stays well formed).
  std::string no_tok = bytes;
  for (size_t at = no_tok.find("tokenizer.ggml."); at != std::string::npos; at = no_tok.find("tokenizer.ggml.", at))
    no_tok.replace(at, 15, "tokenizer.gxxx.");
  add("no-tokenizer", no_tok, "no tokenizer (tokenizer.ggml.model missing)");
  v.push_back({"vocab-only", std::string(OG_TESTDATA_DIR) + "/vocab/ggml-vocab-llama-spm.gguf",
               "holds no tensors (a vocabulary-only file?)"});
  return v;
}

std::vector<BadModel> hf_cases() {
  auto edit = [](const std::function<void(nlohmann::json&)>& f) { return edited_config(f); };
  return {
      {"hf-no-config", hf_copy("hf-no-config", "", {"config.json"}), "no config.json"},
      {"hf-invalid-json", hf_copy("hf-invalid-json", "{\"a\":"), "config.json: not valid JSON"},
      {"hf-array", hf_copy("hf-array", "[1, 2]"), "config.json: expected a JSON object at the top level"},
      {"hf-no-hidden-size", hf_copy("hf-no-hidden-size", edit([](auto& c) { c.erase("hidden_size"); })),
       "missing required field hidden_size"},
      {"hf-string-layers", hf_copy("hf-string-layers", edit([](auto& c) { c["num_hidden_layers"] = "x"; })),
       "num_hidden_layers must be an integer"},
      {"hf-huge-heads", hf_copy("hf-huge-heads", edit([](auto& c) { c["num_attention_heads"] = 1e30; })),
       "num_attention_heads must be an integer"},
      {"hf-negative-ff", hf_copy("hf-negative-ff", edit([](auto& c) { c["intermediate_size"] = -3; })),
       "intermediate_size = -3 is out of range"},
      {"hf-no-archs", hf_copy("hf-no-archs", edit([](auto& c) { c["architectures"] = nlohmann::json::array(); })),
       "architectures must be a non-empty list of names"},
      {"hf-yarn", hf_copy("hf-yarn", edit([](auto& c) { c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4}}; })),
       "yarn scaling needs original_max_position_embeddings"},
      {"hf-no-weights", hf_copy("hf-no-weights", "", {"model.safetensors"}), "no model.safetensors"},
      {"hf-no-tokenizer", hf_copy("hf-no-tokenizer", "", {"tokenizer.json"}), "no tokenizer.json"},
  };
}

// The process ended by itself with exit code 1 and its last stderr line is the error.
void expect_clean_error(const Proc& p, const std::string& what, const std::string& message) {
  EXPECT_EQ(p.code, 1) << what << "\n" << p.err;
  const auto ls = lines(p.err);
  ASSERT_FALSE(ls.empty()) << what;
  EXPECT_NE(ls.back().find(": error: "), std::string::npos) << what << "\n" << p.err;
  EXPECT_NE(ls.back().find(message), std::string::npos) << what << ": wanted '" << message << "'\n" << p.err;
  EXPECT_TRUE(p.out.empty()) << what << "\n" << p.out;
}

TEST(BadInputs, RunAndChatRefuseEveryBrokenModel) {
  ASSERT_TRUE(fs::exists(kGguf)) << "missing test data " << kGguf;
  std::vector<BadModel> cases = gguf_cases();
  for (BadModel& c : hf_cases()) cases.push_back(std::move(c));
  for (const BadModel& c : cases) {
    expect_clean_error(offgraph({"run", "--model", c.path, "--prompt", "Once upon a time", "--max-new-tokens", "8"}),
                       "run " + c.what, c.message);
    const Proc chat = offgraph({"chat", "--model", c.path, "--max-new-tokens", "8"}, "Once upon a time\n");
    if (c.what == "nan-weights") {
      // The model loads; the failed turn is reported and rolled back, and the chat
      // goes on; it ends with exit code 1 because every turn failed.
      EXPECT_EQ(chat.code, 1) << chat.err;
      EXPECT_NE(chat.err.find("[error: the model produced a non-finite logit"), std::string::npos) << chat.err;
      EXPECT_NE(lines(chat.err).back().find("every turn failed (1 of 1)"), std::string::npos) << chat.err;
      EXPECT_TRUE(chat.out.empty()) << chat.out;
      continue;
    }
    expect_clean_error(chat, "chat " + c.what, c.message);
  }
}

// inspect accepts the files whose model loads (NaN weights and a missing
// tokenizer are found only when running); one that parses but cannot be run
// (vocab-only) is printed, then refused; every unreadable one is an error.
TEST(BadInputs, InspectRefusesUnreadableFiles) {
  ASSERT_TRUE(fs::exists(kGguf)) << "missing test data " << kGguf;
  for (const BadModel& c : gguf_cases()) {
    const Proc p = offgraph({"inspect", c.path});
    if (c.what == "nan-weights" || c.what == "no-tokenizer") {
      EXPECT_EQ(p.code, 0) << c.what << "\n" << p.err;
      continue;
    }
    if (c.what == "vocab-only") {
      EXPECT_EQ(p.code, 1) << c.what << "\n" << p.err;
      EXPECT_EQ(lines(p.err).size(), 1u) << c.what << "\n" << p.err;
      EXPECT_FALSE(p.out.empty()) << c.what;
      continue;
    }
    EXPECT_EQ(p.code, 1) << c.what << "\n" << p.err;
    EXPECT_EQ(lines(p.err).size(), 1u) << c.what << "\n" << p.err;
    EXPECT_TRUE(p.out.empty()) << c.what;
  }
}

// One rule for every command: a model path that does not exist is an
// unreadable file (exit 1), a missing --model is bad usage (exit 2).
TEST(BadInputs, SameFaultSameExitCodeInEveryCommand) {
  const std::string none = scratch_dir() + "/no-such-model.gguf";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"run", "--model", none, "--prompt", "hi"},
           {"chat", "--model", none},
           {"inspect", none},
           {"inspect", "--model", none},
           {"tokenize", "--model", none, "hi"},
           {"detokenize", "--model", none, "1"},
           {"run", "--model", kGguf, "--tokenizer", none, "--prompt", "hi"},
           {"tokenize", "--tokenizer", none, "hi"}}) {
    const Proc p = offgraph(args, "");
    EXPECT_EQ(p.code, 1) << args[0] << " " << args[1] << "\n" << p.err;
    EXPECT_EQ(lines(p.err).size(), 1u) << p.err;
    EXPECT_NE(p.err.find("no-such-model.gguf: no such file"), std::string::npos) << p.err;
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"run", "--prompt", "hi"}, {"chat"}, {"inspect"}, {"tokenize", "hi"}, {"detokenize", "1"}}) {
    const Proc p = offgraph(args, "");
    EXPECT_EQ(p.code, 2) << args[0] << "\n" << p.err;
    EXPECT_EQ(lines(p.err).size(), 1u) << p.err;
  }
}

// stdin that cannot be read (a directory) is an error naming stdin, never an
// empty input with exit code 0.
TEST(BadInputs, UnreadableStdinIsAnError) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"tokenize", "--model", kGguf}, {"detokenize", "--model", kGguf}, {"chat", "--model", kGguf}}) {
    const Proc p = offgraph(args, "", "", scratch_dir());
    EXPECT_EQ(p.code, 1) << args[0] << "\n" << p.err;
    EXPECT_NE(p.err.find("stdin: is a directory"), std::string::npos) << args[0] << "\n" << p.err;
    EXPECT_TRUE(p.out.empty()) << args[0] << "\n" << p.out;
  }
}

// A value pasted by mistake (a whole file) is quoted by its head and size, so the
// error stays one short line.
TEST(BadInputs, HugeFlagValuesAreShortenedInTheMessage) {
  const std::string huge(100000, 'x');
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--model", kGguf, "--prompt", "a", huge},
        std::vector<std::string>{"run", "--model", kGguf, "--prompt", "a", "--top-k", huge},
        std::vector<std::string>{"run", "--model", kGguf, "--prompt", "a", "--kv-windows", huge}}) {
    const Proc p = offgraph(args);
    EXPECT_EQ(p.code, 2) << p.err.substr(0, 300);
    EXPECT_EQ(lines(p.err).size(), 1u);
    EXPECT_LT(p.err.size(), 300u) << p.err.substr(0, 300);
    EXPECT_NE(p.err.find("(100000 bytes)"), std::string::npos) << p.err.substr(0, 300);
  }
}

// A prompt longer than the cache is refused before any work; with the capacity
// raised it runs; invalid UTF-8 in a prompt is encoded, not a crash.
TEST(BadInputs, LongAndInvalidPrompts) {
  std::string prompt;
  for (int i = 0; i < 2500; ++i) prompt += "once upon a time ";
  Proc p = offgraph({"run", "--model", kGguf, "--prompt", prompt, "--chat", "0"});
  EXPECT_EQ(p.code, 2);
  EXPECT_NE(p.err.find("does not fit: a session of 512 positions"), std::string::npos) << p.err.substr(0, 300);
  EXPECT_EQ(p.err.find("[cache] after prefill"), std::string::npos);
  p = offgraph({"run", "--model", kGguf, "--prompt", "Once \xff\xfe upon \xc3 a", "--max-new-tokens", "5"});
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_FALSE(p.out.empty());
}

// Output that cannot be written (a full disk) is an error, not a silent success.
TEST(BadInputs, UnwritableStdoutIsAnError) {
  ASSERT_TRUE(fs::exists("/dev/full"));
  for (const auto& [args, input] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"run", "--model", kGguf, "--prompt", "Once upon a time", "--max-new-tokens", "8"}, ""},
           {{"chat", "--model", kGguf, "--max-new-tokens", "8"}, "Once upon a time\n"},
           {{"inspect", kGguf, "--json"}, ""},
           {{"run", "--help"}, ""}}) {
    const Proc p = offgraph(args, input, "/dev/full");
    EXPECT_EQ(p.code, 1) << args[0] << "\n" << p.err;
    EXPECT_NE(lines(p.err).back().find("cannot write the output to stdout"), std::string::npos) << p.err;
  }
}

}  // namespace
}  // namespace og::e2e
