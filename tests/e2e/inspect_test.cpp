// `offgraph inspect` end to end: every real model and vocab-only GGUF in the
// test data, every synthetic family in both layouts, and bad inputs (one line,
// exit 1) and bad usage (exit 2). Needs the offgraph binary (OG_BINARY_DIR).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "synth/synth.h"

namespace {

namespace fs = std::filesystem;
const std::string kData = OG_TESTDATA_DIR;

struct Result {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Result inspect(const std::string& args) {
  const std::string bin = std::string(OG_BINARY_DIR) + "/offgraph";
  EXPECT_TRUE(fs::exists(bin)) << bin << " is missing: build the offgraph target first";
  const std::string out = testing::TempDir() + "/og_inspect_out", err = testing::TempDir() + "/og_inspect_err";
  std::string cmd = quote(bin) + " inspect " + args + " >" + quote(out) + " 2>" + quote(err);
  int status = std::system(cmd.c_str());
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

nlohmann::json inspect_json(const std::string& model) {
  Result r = inspect(quote(model) + " --json");
  EXPECT_EQ(r.rc, 0) << model << ": " << r.err;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  return nlohmann::json::parse(r.out);
}

TEST(Inspect, RealModels) {
  for (const char* m : {"models/stories260K/stories260K.gguf", "models/stories260K/stories260K-ggml-org.gguf",
                        "models/llama-2-tiny-random-gguf/llama-2-tiny-random.gguf", "models/stories260K-hf"}) {
    Result r = inspect(quote(kData + "/" + m));
    ASSERT_EQ(r.rc, 0) << m << ": " << r.err;
    EXPECT_NE(r.out.find("hyper-parameters:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("kv:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("chat template: no"), std::string::npos) << r.out;
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
  EXPECT_EQ(h["tensors"]["by_dtype"]["F32"]["count"], 47);
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
  Result r = inspect(quote(kData + "/vocab/ggml-vocab-llama-spm.gguf"));
  EXPECT_EQ(r.rc, 0);
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
    Result r = inspect(quote(c.model));
    EXPECT_EQ(r.rc, 1) << c.model;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(Inspect, Usage) {
  Result help = inspect("--help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("usage: offgraph inspect"), std::string::npos);
  Result none = inspect("");
  EXPECT_EQ(none.rc, 2);
  EXPECT_EQ(count_lines(none.err), 1) << none.err;
  Result flag = inspect(quote(kData + "/models/stories260K-hf") + " --frobnicate");
  EXPECT_EQ(flag.rc, 2);
  EXPECT_NE(flag.err.find("unknown option '--frobnicate'"), std::string::npos) << flag.err;
  Result two = inspect("a.gguf b.gguf");
  EXPECT_EQ(two.rc, 2);
}

}  // namespace
