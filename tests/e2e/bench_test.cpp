// `offgraph bench` through the built binary: the JSON and markdown reports
// of prefill, decode, batched decode and depth tests on stories260K (tiny, so
// the numbers mean nothing: only their presence and consistency are checked,
// never a speed), and every bad flag or value as one line with exit code 2.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "e2e_util.h"

namespace og::e2e {
namespace {

const std::string kGguf = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

void expect_data() { ASSERT_TRUE(std::filesystem::exists(kGguf)) << "missing test data " << kGguf; }

TEST(Bench, JsonHasEveryTestWithItsLimits) {
  expect_data();
  Proc p = offgraph({"bench", "--model", kGguf, "-p", "16", "-n", "4", "-b", "1,3", "-d", "0,8", "-r", "2", "-t", "1",
                     "--kv-storage-dtype", "f16", "--json"});
  ASSERT_EQ(p.code, 0) << p.err;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_EQ(j["kv_storage_dtype"], "f16");
  const int64_t wbytes = j["matmul_weight_bytes"];
  EXPECT_GT(wbytes, 0);
  EXPECT_GT(j["matmul_macs_per_token"].get<int64_t>(), 0);
  const std::vector<std::string> want = {"pp16", "tg4", "tg4 x3", "pp16 @ d8", "tg4 @ d8", "tg4 x3 @ d8"};
  ASSERT_EQ(j["results"].size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const nlohmann::json& r = j["results"][i];
    EXPECT_EQ(r["test"], want[i]);
    EXPECT_EQ(r["threads"], 1);
    ASSERT_EQ(r["tok_s"].size(), 2u);
    EXPECT_GT(r["tok_s_mean"].get<double>(), 0);
    EXPECT_GE(r["tok_s_sd"].get<double>(), 0);
    if (r["kind"] == "decode") {
      // The limit and the fraction are means over the repetitions, each
      // repetition against its own probe: the fraction is near, not equal to,
      // the mean tok/s against the mean limit.
      const double bw = r["read_bandwidth_gbs"].get<double>();
      ASSERT_GT(bw, 0);
      EXPECT_FALSE(r.contains("madd_peak_per_s"));
      const double naive = r["tok_s_mean"].get<double>() * r["bytes_per_token"].get<double>() / (bw * 1e9);
      EXPECT_GT(r["fraction_of_bandwidth"].get<double>(), naive / 3);
      EXPECT_LT(r["fraction_of_bandwidth"].get<double>(), naive * 3);
      // Weights once per step shared by the sequences, plus each one's K/V.
      const double per_seq = static_cast<double>(wbytes) / r["n_seqs"].get<double>();
      EXPECT_GE(r["bytes_per_token"].get<double>(), per_seq);
      if (r["depth"] == 0) {
        EXPECT_LT(r["bytes_per_token"].get<double>(), per_seq * 1.5);
      }
    } else {
      EXPECT_GT(r["madd_peak_per_s"].get<double>(), 0);
      EXPECT_FALSE(r.contains("read_bandwidth_gbs"));
      EXPECT_GT(r["fraction_of_peak"].get<double>(), 0);
    }
  }
}

TEST(Bench, MarkdownTableByDefault) {
  expect_data();
  Proc p = offgraph({"bench", "--model", kGguf, "--n-prompt", "8", "--n-gen", "2", "--repetitions", "1",
                     "--threads", "1,2", "--mmap"});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("| test | threads | tok/s |"), std::string::npos) << p.out;
  EXPECT_EQ(count(p.out, "| pp8 |"), 2u) << p.out;
  EXPECT_EQ(count(p.out, "| tg2 |"), 2u) << p.out;
  EXPECT_NE(p.out.find("weights mmap"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("kv f16 batched-sequence;"), std::string::npos) << p.out;
}

TEST(Bench, BatchedCellCacheKind) {
  expect_data();
  Proc p = offgraph({"bench", "--model", kGguf, "-p", "0", "-n", "3", "-b", "1,3", "-d", "40", "-r", "1", "-t", "1",
                     "--cache-kind", "batched-cell", "--json"});
  ASSERT_EQ(p.code, 0) << p.err;
  const auto j = nlohmann::json::parse(p.out);
  EXPECT_EQ(j["cache_kind"], "batched-cell");
  ASSERT_EQ(j["results"].size(), 2u);
  for (const auto& r : j["results"]) EXPECT_GT(r["tok_s_mean"].get<double>(), 0.0);
}

TEST(Bench, HelpListsTheShortFlags) {
  Proc p = offgraph({"bench", "--help"});
  ASSERT_EQ(p.code, 0);
  for (const char* f : {"-p, --n-prompt", "-n, --n-gen", "-d, --n-depth", "-b, --n-seqs", "-t, --threads",
                        "-r, --repetitions", "--json"})
    EXPECT_NE(p.out.find(f), std::string::npos) << f;
}

struct BadCase {
  std::vector<std::string> args;
  std::string message;
};

TEST(Bench, EveryBadFlagAndValueExitsWithTwo) {
  expect_data();
  const std::string m = kGguf;
  const std::vector<BadCase> cases = {
      {{"bench"}, "--model is required"},
      {{"bench", "--model", m, "-p", "x"}, "--n-prompt expects comma-separated integers"},
      {{"bench", "--model", m, "-p", "-1"}, "--n-prompt values must be in [0,"},
      {{"bench", "--model", m, "-p=", "1"}, "--n-prompt expects comma-separated integers, got ''"},
      {{"bench", "--model", m, "-n", "4,"}, "--n-gen expects comma-separated integers"},
      {{"bench", "--model", m, "-d", "y"}, "--n-depth expects comma-separated integers"},
      {{"bench", "--model", m, "-b", "0"}, "--n-seqs values must be in [1, 1024]"},
      {{"bench", "--model", m, "-b", "2000"}, "--n-seqs values must be in [1, 1024]"},
      {{"bench", "--model", m, "-t", "0"}, "--threads values must be in [1, 1024]"},
      {{"bench", "--model", m, "-r", "0"}, "--repetitions must be in [1, 1000]"},
      {{"bench", "--model", m, "-r", "two"}, "--repetitions expects an integer"},
      {{"bench", "--model", m, "-r"}, "--repetitions needs a value"},
      {{"bench", "--model", m, "--kv-storage-dtype", "q4"}, "--kv-storage-dtype must be one of f32|f16|bf16|q8_0"},
      {{"bench", "--model", m, "--cache-kind", "sequence"}, "--cache-kind must be one of batched-cell|batched-sequence"},
      {{"bench", "--model", m, "--prefill-chunk-size", "0"}, "--prefill-chunk-size must be in [1,"},
      {{"bench", "--model", m, "--json=maybe"}, "--json takes no value or true|false"},
      {{"bench", "--model", m, "-p", "0", "-n", "0"}, "nothing to measure"},
      {{"bench", "--model", m, "-z", "1"}, "unknown flag '-z'"},
      {{"bench", "--model", m, "-pp", "1"}, "unknown flag '-pp'"},
      {{"bench", "--model", m, "--n-promt", "1"}, "unknown flag --n-promt (did you mean --n-prompt?)"},
      {{"bench", "--model", m, "-p", "1", "--n-prompt", "2"}, "--n-prompt given more than once"},
      {{"bench", "--model", m, "extra"}, "unexpected argument 'extra'"},
  };
  for (const auto& c : cases) {
    Proc p = offgraph(c.args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_EQ(p.code, 2) << joined << "\n" << p.err;
    EXPECT_NE(p.err.find(c.message), std::string::npos) << joined << "\nwanted: " << c.message << "\ngot: " << p.err;
    EXPECT_EQ(lines(p.err).size(), 1u) << joined << "\n" << p.err;
    EXPECT_TRUE(p.out.empty()) << joined;
  }
}

TEST(Bench, MmprojAddsAnImageEncodeRowPerThreadCount) {
  // og-synth's tiny Gemma 3 and its tower (56x56 pixels): only the row's
  // presence and consistency, never a speed.
  const std::string d = scratch_dir(), model = d + "/bench-vision-m.gguf", mmproj = d + "/bench-vision-p.gguf";
  const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth --family gemma3 --vision --format gguf --out '" +
                          model + "' --mmproj-out '" + mmproj + "' > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  Proc p = offgraph({"bench", "--model", model, "--mmproj", mmproj, "-p", "0", "-n", "0", "-r", "2", "-t", "1,2",
                     "--json"});
  ASSERT_EQ(p.code, 0) << p.err;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_TRUE(j["results"].empty());
  ASSERT_EQ(j["image_encode"].size(), 2u);
  for (int t = 1; t <= 2; ++t) {
    const nlohmann::json& r = j["image_encode"][t - 1];
    EXPECT_EQ(r["threads"], t);
    const double ips = r["images_per_s"].get<double>(), ms = r["ms_per_image"].get<double>();
    EXPECT_GT(ips, 0);
    EXPECT_GT(ms, 0);
    EXPECT_GE(r["sd"].get<double>(), 0);
  }
  p = offgraph({"bench", "--model", model, "--mmproj", mmproj, "-p", "4", "-n", "0", "-r", "1", "-t", "1"});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("| pp4 | 1 |"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("| image encode | 1 |"), std::string::npos) << p.out;
  p = offgraph({"bench", "--model", model, "--mmproj", d + "/no-such-mmproj.gguf", "-p", "4", "-n", "0"});
  EXPECT_EQ(p.code, 1) << p.err;
  EXPECT_EQ(lines(p.err).size(), 1u) << p.err;
}

TEST(Bench, BadModelFileExitsWithOne) {
  const std::string path = scratch_dir() + "/bench_garbage.gguf";
  { std::ofstream(path, std::ios::binary) << "not a gguf file at all"; }
  Proc p = offgraph({"bench", "--model", path, "-p", "4", "-n", "0", "-r", "1"});
  EXPECT_EQ(p.code, 1) << p.err;
  EXPECT_EQ(lines(p.err).size(), 1u) << p.err;
}

}  // namespace
}  // namespace og::e2e
