// og-synth --row-pool N (docs/tools.md): benchmark-sized files written from N
// encoded rows per (dtype, row length). A pooled tiny qwen3moe and gpt-oss
// load and run, every expert row is one of at most N pool rows (shared by all
// stacks of one type and row length), the routers stay generated, the same
// arguments give the same bytes, and N < 1, an HF layout or a --script model
// is a usage error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <sys/wait.h>

#include "e2e_util.h"
#include "format/gguf.h"

namespace og::e2e {
namespace {

// og-synth args... ; its exit code, stderr in *err.
int og_synth(const std::string& args, std::string* err) {
  const std::string err_path = scratch_dir() + "/row-pool.err";
  const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth " + args + " > /dev/null 2> " + err_path;
  const int st = std::system(cmd.c_str());
  *err = slurp(err_path);
  std::filesystem::remove(err_path);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

std::string write_pooled(const std::string& family, const std::string& dtype, const std::string& name) {
  const std::string out = scratch_dir() + "/" + name;
  std::string err;
  EXPECT_EQ(og_synth("--family " + family + " --format gguf --dtype " + dtype + " --row-pool 4 --out " + out, &err), 0)
      << err;
  return out;
}

// Distinct rows of every expert stack, per (type, row length).
std::map<std::pair<uint32_t, int64_t>, std::set<std::string>> expert_rows(const GgufFile& f, int* stacks) {
  std::map<std::pair<uint32_t, int64_t>, std::set<std::string>> rows;
  *stacks = 0;
  for (const TensorInfo& t : f.tensors()) {
    if (t.shape.size() != 3) continue;
    ++*stacks;
    const int64_t n = t.shape[0] * t.shape[1];
    const uint64_t rb = t.nbytes / static_cast<uint64_t>(n);
    for (int64_t r = 0; r < n; ++r)
      rows[{t.type_id, t.shape[2]}].insert(std::string(reinterpret_cast<const char*>(t.data) + r * rb, rb));
  }
  return rows;
}

TEST(SynthRowPool, ExpertRowsArePoolRowsAndTheModelRuns) {
  for (const auto& [family, dtype] : {std::pair<std::string, std::string>{"qwen3moe", "q8_0"}, {"gpt-oss", "mxfp4"}}) {
    const std::string path = write_pooled(family, dtype, family + "-pool.gguf");
    const std::string again = write_pooled(family, dtype, family + "-pool-again.gguf");
    EXPECT_EQ(slurp(path), slurp(again)) << family << ": same arguments, different bytes";
    std::unique_ptr<GgufFile> f = GgufFile::open(path);
    int stacks = 0;
    const auto rows = expert_rows(*f, &stacks);
    EXPECT_GE(stacks, 6) << family;
    for (const auto& [key, distinct] : rows) {
      EXPECT_LE(distinct.size(), 4u) << family << " type " << key.first << " cols " << key.second;
      EXPECT_GE(distinct.size(), 2u) << family << " type " << key.first << " cols " << key.second;
    }
    // The router is generated as without the pool: its rows differ.
    const TensorInfo* router = f->find("blk.0.ffn_gate_inp.weight");
    ASSERT_NE(router, nullptr);
    std::set<std::string> router_rows;
    const uint64_t rb = router->nbytes / static_cast<uint64_t>(router->shape[0]);
    for (int64_t r = 0; r < router->shape[0]; ++r)
      router_rows.insert(std::string(reinterpret_cast<const char*>(router->data) + r * rb, rb));
    EXPECT_EQ(router_rows.size(), static_cast<size_t>(router->shape[0])) << family;
    const Proc i = offgraph({"inspect", path});
    EXPECT_EQ(i.code, 0) << i.err;
    const Proc r = offgraph({"run", "--model", path, "--prompt", "Once upon a time", "--max-new-tokens", "8",
                             "--temperature", "0"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_FALSE(r.out.empty()) << family;
  }
}

TEST(SynthRowPool, BadValuesAreUsageErrors) {
  const std::string out = scratch_dir() + "/bad-pool.gguf";
  for (const std::string& args : {std::string("--format gguf --row-pool 0"), std::string("--format gguf --row-pool -3"),
                                  std::string("--format hf --row-pool 4"),
                                  std::string("--format gguf --row-pool 4 --script no-such-script.json")}) {
    std::string err;
    EXPECT_EQ(og_synth("--family qwen3moe --out " + out + " " + args, &err), 2) << args << "\n" << err;
    EXPECT_NE(err.find("--row-pool"), std::string::npos) << err;
    EXPECT_FALSE(std::filesystem::exists(out)) << args;
  }
}

}  // namespace
}  // namespace og::e2e
