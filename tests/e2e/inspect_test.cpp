// `offgraph inspect` end to end: every real model and vocab-only GGUF in the
// test data, every synthetic family in both layouts, and bad inputs (one line,
// exit 1) and bad usage (exit 2). Needs the offgraph binary (OG_BINARY_DIR).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}
const std::string kData = OG_TESTDATA_DIR;

// `offgraph inspect args...`.
Proc inspect(std::vector<std::string> args) {
  args.insert(args.begin(), "inspect");
  return offgraph(args);
}

int count_lines(const std::string& s) { return static_cast<int>(count(s, "\n")); }

// Every field issue 2 lists, with its type: architecture, hyper-parameters,
// tensor count and bytes by dtype, tokenizer kind and size, chat template
// presence, and (when the model can be loaded) the KV geometry.
void expect_all_fields(const nlohmann::json& j, const std::string& m) {
  EXPECT_TRUE(j["architecture"].is_string()) << m;
  ASSERT_TRUE(j["hparams"].is_object()) << m;
  for (const char* k : {"d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "d_ff", "n_vocab"})
    EXPECT_TRUE(j["hparams"][k].is_number_integer()) << m << " hparams." << k;
  EXPECT_TRUE(j["tensors"]["count"].is_number_integer()) << m;
  EXPECT_TRUE(j["tensors"]["bytes"].is_number_integer()) << m;
  uint64_t bytes = 0;
  for (const auto& [dtype, e] : j["tensors"]["by_dtype"].items()) {
    EXPECT_EQ(dtype, lower(dtype)) << m << ": dtype names are lower case, as GGUF's";
    bytes += e["bytes"].get<uint64_t>();
  }
  EXPECT_EQ(bytes, j["tensors"]["bytes"].get<uint64_t>()) << m;
  EXPECT_TRUE(j["tokenizer"]["kind"].is_string()) << m;
  EXPECT_GT(j["tokenizer"]["size"].get<int>(), 0) << m;
  EXPECT_TRUE(j["chat_template"].is_boolean()) << m;
  ASSERT_TRUE(j["kv"].is_object()) << m << ": " << j.value("kv_unavailable", "");
  ASSERT_FALSE(j["kv"]["caches"].empty()) << m;
  for (const auto& c : j["kv"]["caches"]) {
    for (const char* k : {"kv_heads", "head_dim_k", "head_dim_v", "window"})
      EXPECT_TRUE(c[k].is_number_integer()) << m << " kv cache field " << k;
    EXPECT_TRUE(c["layers"].is_array()) << m;
  }
}

nlohmann::json inspect_json(const std::string& model) {
  Proc r = inspect({model, "--json"});
  EXPECT_EQ(r.code, 0) << model << ": " << r.err;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  return nlohmann::json::parse(r.out);
}

TEST(Inspect, RealModels) {
  for (const char* m : {"models/stories260K/stories260K.gguf", "models/stories260K/stories260K-ggml-org.gguf",
                        "models/llama-2-tiny-random-gguf/llama-2-tiny-random.gguf", "models/stories260K-hf"}) {
    Proc r = inspect({kData + "/" + m});
    ASSERT_EQ(r.code, 0) << m << ": " << r.err;
    EXPECT_NE(r.out.find("hyper-parameters:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("kv:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("chat template: no"), std::string::npos) << r.out;
    expect_all_fields(inspect_json(kData + "/" + m), m);
  }
  nlohmann::json j = inspect_json(kData + "/models/stories260K/stories260K.gguf");
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["hparams"]["d_model"], 64);
  EXPECT_EQ(j["hparams"]["n_kv_heads"], 4);
  EXPECT_EQ(j["hparams"]["d_ff"], 172);
  EXPECT_EQ(j["tensors"]["count"], 47);
  EXPECT_EQ(j["tensors"]["by_dtype"]["f32"]["count"], 47);
  EXPECT_EQ(j["tokenizer"]["size"], 512);
  EXPECT_EQ(j["tokenizer"]["model"], "llama");
  ASSERT_TRUE(j["kv"].is_object());
  EXPECT_EQ(j["kv"]["caches"].size(), 5u);
  EXPECT_EQ(j["kv"]["caches"][0]["kv_heads"], 4);
  EXPECT_EQ(j["kv"]["caches"][0]["head_dim_k"], 8);
  nlohmann::json t = inspect_json(kData + "/models/llama-2-tiny-random-gguf/llama-2-tiny-random.gguf");
  EXPECT_EQ(t["tensors"]["by_dtype"]["f16"]["count"], 9);
  EXPECT_EQ(t["tensors"]["by_dtype"]["f32"]["count"], 3);
  EXPECT_EQ(t["tokenizer"]["size"], 32000);
  nlohmann::json h = inspect_json(kData + "/models/stories260K-hf");
  EXPECT_EQ(h["architecture"], "LlamaForCausalLM");
  EXPECT_EQ(h["hparams"]["n_layers"], 5);
  EXPECT_EQ(h["tensors"]["by_dtype"]["f32"]["count"], 47);
  EXPECT_EQ(h["tokenizer"]["size"], 512);
}

TEST(Inspect, VocabOnlyGgufs) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kData + "/vocab")) {
    if (e.path().extension() != ".gguf") continue;
    ++n;
    nlohmann::json j = inspect_json(e.path().string());
    EXPECT_EQ(j["tensors"]["count"], 0) << e.path();
    EXPECT_TRUE(j["kv"].is_null()) << e.path();
    EXPECT_TRUE(j["tokenizer"].is_object()) << e.path();
    EXPECT_GT(j["tokenizer"]["size"].get<int>(), 0) << e.path();
  }
  EXPECT_GE(n, 10);
  Proc r = inspect({kData + "/vocab/ggml-vocab-llama-spm.gguf"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("kv:            unavailable"), std::string::npos) << r.out;
}

TEST(Inspect, SyntheticFamiliesBothLayouts) {
  using og::synth::Family;
  for (Family f : {Family::kLlama, Family::kQwen2, Family::kQwen3, Family::kMistral, Family::kGemma3}) {
    og::synth::SynthSpec spec = og::synth::tiny_spec(f);
    const std::string base = testing::TempDir() + "/og_inspect_" + og::synth::family_name(f);
    fs::remove_all(base + "-hf");
    og::synth::write_gguf(spec, base + ".gguf");
    og::synth::write_hf(spec, base + "-hf");
    for (const std::string& m : {base + ".gguf", base + "-hf"}) {
      nlohmann::json j = inspect_json(m);
      expect_all_fields(j, m);
      EXPECT_EQ(j["hparams"]["d_model"], spec.d_model) << m;
      EXPECT_EQ(j["hparams"]["n_kv_heads"], spec.n_kv_heads) << m;
      EXPECT_EQ(j["hparams"]["head_dim"], spec.head_dim) << m;
      ASSERT_TRUE(j["kv"].is_object()) << m << ": " << j.value("kv_unavailable", "");
      const nlohmann::json& caches = j["kv"]["caches"];
      ASSERT_EQ(caches.size(), static_cast<size_t>(spec.n_layers)) << m;
      for (int64_t l = 0; l < spec.n_layers; ++l) {
        const bool sliding = f == Family::kMistral || (f == Family::kGemma3 && (l + 1) % 6 != 0);
        EXPECT_EQ(caches[l]["window"], sliding ? spec.window : 0) << m << " layer " << l;
        EXPECT_EQ(caches[l]["kv_heads"], spec.n_kv_heads) << m;
      }
    }
  }
}

TEST(Inspect, BadInputsAreOneLineAndExitOne) {
  const std::string empty_dir = testing::TempDir() + "/og_inspect_empty";
  fs::create_directories(empty_dir);
  const std::string garbage = testing::TempDir() + "/og_inspect_garbage.gguf";
  std::ofstream(garbage) << "this is not a model file at all, just some text";
  const std::string bad_config = testing::TempDir() + "/og_inspect_badcfg";
  fs::create_directories(bad_config);
  std::ofstream(bad_config + "/config.json") << "{\"hidden_size\": ";
  struct Case {
    std::string model, expect;
  };
  for (const Case& c : {Case{"/nonexistent/model.gguf", "no such file"}, Case{empty_dir, "no config.json"},
                        Case{garbage, "not a GGUF file"}, Case{bad_config, "not valid JSON"}}) {
    Proc r = inspect({c.model});
    EXPECT_EQ(r.code, 1) << c.model;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(Inspect, Usage) {
  Proc help = inspect({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("usage: offgraph inspect"), std::string::npos);
  Proc none = inspect({});
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(count_lines(none.err), 1) << none.err;
  Proc flag = inspect({kData + "/models/stories260K-hf", "--frobnicate"});
  EXPECT_EQ(flag.code, 2);
  EXPECT_NE(flag.err.find("unknown option '--frobnicate'"), std::string::npos) << flag.err;
  Proc two = inspect({"a.gguf", "b.gguf"});
  EXPECT_EQ(two.code, 2);
}

}  // namespace
}  // namespace og::e2e
