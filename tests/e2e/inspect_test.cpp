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
#include "temp_dir.h"

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

// A vocabulary-only file cannot be run: inspect prints what it holds, then
// the reason as its one error line, and exits 1.
TEST(Inspect, VocabOnlyGgufs) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kData + "/vocab")) {
    if (e.path().extension() != ".gguf") continue;
    ++n;
    Proc r = inspect({e.path().string(), "--json"});
    EXPECT_EQ(r.code, 1) << e.path() << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("holds no tensors"), std::string::npos) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["tensors"]["count"], 0) << e.path();
    EXPECT_TRUE(j["kv"].is_null()) << e.path();
    EXPECT_EQ(j["runnable"], false) << e.path();
    EXPECT_NE(j["error"].get<std::string>().find("holds no tensors"), std::string::npos) << e.path();
    EXPECT_TRUE(j["tokenizer"].is_object()) << e.path();
    EXPECT_GT(j["tokenizer"]["size"].get<int>(), 0) << e.path();
  }
  EXPECT_GE(n, 10);
  Proc r = inspect({kData + "/vocab/ggml-vocab-llama-spm.gguf"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("kv:            unavailable: the model cannot be run"), std::string::npos) << r.out;
}

// What `run` rejects, inspect rejects too (exit 1), after printing what it
// could read: the hyper-parameters come from the loader's ModelConfig, so a
// missing tensor still shows them, an unknown architecture does not.
TEST(Inspect, FilesRunRejectsExitOneAfterWhatTheyHold) {
  const std::string base = og::test::temp_path("og_inspect_reject");
  og::synth::SynthSpec spec = og::synth::tiny_spec(og::synth::Family::kLlama);
  fs::remove_all(base + "-hf");
  og::synth::write_hf(spec, base + "-hf");
  fs::remove_all(base + "-arch");
  fs::copy(base + "-hf", base + "-arch");
  {
    std::ifstream in(base + "-hf/config.json");
    nlohmann::json c = nlohmann::json::parse(in);
    c["architectures"] = {"MambaForCausalLM"};
    std::ofstream(base + "-arch/config.json") << c.dump();
    c["architectures"] = {"LlamaForCausalLM"};
    c["num_hidden_layers"] = spec.n_layers + 1;  // the last layer's tensors are missing
    std::ofstream(base + "-hf/config.json") << c.dump();
  }
  Proc missing = inspect({base + "-hf", "--json"});
  EXPECT_EQ(missing.code, 1) << missing.err;
  EXPECT_EQ(count_lines(missing.err), 1) << missing.err;
  EXPECT_NE(missing.err.find("missing tensor"), std::string::npos) << missing.err;
  nlohmann::json j = nlohmann::json::parse(missing.out);
  EXPECT_EQ(j["hparams"]["n_layers"], spec.n_layers + 1);
  EXPECT_EQ(j["hparams"]["d_model"], spec.d_model);
  EXPECT_EQ(j["runnable"], false);
  Proc arch = inspect({base + "-arch"});
  EXPECT_EQ(arch.code, 1) << arch.err;
  EXPECT_NE(arch.err.find("architecture 'MambaForCausalLM' is not supported"), std::string::npos) << arch.err;
  EXPECT_NE(arch.out.find("architecture:  MambaForCausalLM"), std::string::npos) << arch.out;
  EXPECT_NE(arch.out.find("hyper-parameters: unavailable"), std::string::npos) << arch.out;
  Proc ok = inspect({"--json", "--model=" + kData + "/models/stories260K/stories260K.gguf"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["runnable"], true);
}

// inspect shows the ModelConfig the loader reads: a float written for an
// integer (2048.0) is what the loader accepts, and a chat_template.json is
// seen by inspect as by run.
TEST(Inspect, ShowsWhatTheLoaderReads) {
  const std::string dir = og::test::temp_path("og_inspect_loader");
  fs::remove_all(dir);
  fs::copy(kData + "/models/stories260K-hf", dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add);
  for (const auto& e : fs::directory_iterator(dir)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  std::ifstream in(dir + "/config.json");
  nlohmann::json c = nlohmann::json::parse(in);
  c["max_position_embeddings"] = 2048.0;
  std::ofstream(dir + "/config.json") << c.dump();
  std::ofstream(dir + "/chat_template.json") << R"({"chat_template": "{{ '<|im_start|>' }}"})";
  nlohmann::json j = inspect_json(dir);
  EXPECT_EQ(j["hparams"]["n_ctx"], 2048);
  EXPECT_EQ(j["chat_template"], true);
  EXPECT_EQ(j["runnable"], true);
}

TEST(Inspect, SyntheticFamiliesBothLayouts) {
  using og::synth::Family;
  for (Family f : {Family::kLlama, Family::kQwen2, Family::kQwen3, Family::kMistral, Family::kGemma3}) {
    og::synth::SynthSpec spec = og::synth::tiny_spec(f);
    const std::string base = og::test::temp_path(std::string("og_inspect_") + og::synth::family_name(f));
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
  const std::string empty_dir = og::test::temp_path("og_inspect_empty");
  fs::create_directories(empty_dir);
  const std::string garbage = og::test::temp_path("og_inspect_garbage.gguf");
  std::ofstream(garbage) << "this is not a model file at all, just some text";
  const std::string bad_config = og::test::temp_path("og_inspect_badcfg");
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
  EXPECT_NE(flag.err.find("offgraph inspect: error: unknown flag --frobnicate"), std::string::npos) << flag.err;
  Proc two = inspect({"a.gguf", "b.gguf"});
  EXPECT_EQ(two.code, 2);
  Proc json_value = inspect({kData + "/models/stories260K-hf", "--json=maybe"});
  EXPECT_EQ(json_value.code, 2);
  EXPECT_NE(json_value.err.find("--json takes no value or true|false"), std::string::npos) << json_value.err;
}

}  // namespace
}  // namespace og::e2e
