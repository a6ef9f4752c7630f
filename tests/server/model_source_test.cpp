// A model source is opened once per run (issue 49 item 5): load_model over an
// HF directory opens each of its files once and lists the directory at most
// once; over a GGUF file it opens the file once. Opens are counted with
// inotify on the directory, so nothing in the code under test is changed for
// the test; every fixture lives in this test's own temp directory, so other
// processes cannot add opens. The tokenizer, templates and server facts
// still come out as before.
#include <gtest/gtest.h>

#ifdef __linux__
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>
#endif

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "format/model_source.h"
#include "model/gguf_convert.h"
#include "model/synth_fixture.h"
#include "runtime/run_setup.h"
#include "server/model_facts.h"
#include "tokenizer/gguf_vocab_export.h"

namespace og {
namespace {

namespace fs = std::filesystem;
using namespace og::test;

#ifdef __linux__
// IN_OPEN events per entry of `dir` while `fn` runs; "" counts the directory
// itself being opened (a listing). Each open is followed by its close, so two
// opens of one file are never merged into one event.
std::map<std::string, int> opens_during(const std::string& dir, const std::function<void()>& fn) {
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  EXPECT_GE(fd, 0);
  EXPECT_GE(inotify_add_watch(fd, dir.c_str(), IN_OPEN | IN_CLOSE), 0);
  fn();
  std::map<std::string, int> n;
  alignas(inotify_event) char buf[1 << 16];
  for (;;) {
    const ssize_t got = read(fd, buf, sizeof buf);
    if (got <= 0) break;
    for (ssize_t off = 0; off < got;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + off);
      if (e->mask & IN_OPEN) ++n[e->len ? std::string(e->name) : std::string()];
      off += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  close(fd);
  return n;
}

void expect_each_once(const std::map<std::string, int>& opens) {
  for (const auto& [name, count] : opens) {
    if (name.empty()) EXPECT_LE(count, 1) << "directory listed " << count << " times";
    else EXPECT_EQ(count, 1) << name << " opened " << count << " times";
  }
}

std::string copy_dir(const std::string& from, const TempDir& tmp, const std::string& name) {
  const std::string to = tmp.path(name);
  fs::copy(from, to, fs::copy_options::recursive);
  return to;
}

TEST(ModelSource, HfDirectoryFilesAreOpenedOnce) {
  TempDir tmp;
  // The synth Gemma 4 keeps its template in tokenizer_config.json.
  const std::string dir = copy_dir(synth_hf(synth::Family::kGemma4), tmp, "gemma4-hf");
  ModelSetup s;
  s.model = dir;
  LoadedModel l;
  const auto opens = opens_during(dir, [&] { l = load_model(s); });
  expect_each_once(opens);
  for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"})
    EXPECT_EQ(opens.count(f), 1u) << f << " never opened";
  ASSERT_TRUE(l.model_template.has_value());
  EXPECT_NE(l.tok, nullptr);
  ASSERT_NE(l.source, nullptr);
  EXPECT_EQ(l.source->gguf(), nullptr);
  ASSERT_NE(l.source->hf(), nullptr);
}

TEST(ModelSource, RealHfCheckpointFilesAreOpenedOnce) {
  TempDir tmp;
  const std::string dir = copy_dir(std::string(OG_TESTDATA_DIR) + "/models/stories260K-hf", tmp, "stories-hf");
  ModelSetup s;
  s.model = dir;
  LoadedModel l;
  expect_each_once(opens_during(dir, [&] { l = load_model(s); }));
  EXPECT_GT(l.tok->n_vocab(), 0);
}

// chat_template.json (the list form) serves both the template and its variants: read once.
TEST(ModelSource, ChatTemplateJsonIsReadOnceForTemplateAndVariants) {
  TempDir tmp;
  const std::string dir = copy_dir(synth_hf(synth::Family::kLlama), tmp, "llama-hf");
  nlohmann::json tc = read_json_file(dir + "/tokenizer_config.json");
  tc.erase("chat_template");
  std::ofstream(dir + "/tokenizer_config.json") << tc.dump();
  std::ofstream(dir + "/chat_template.json")
      << R"({"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]})";
  ModelSetup s;
  s.model = dir;
  LoadedModel l;
  const auto opens = opens_during(dir, [&] { l = load_model(s); });
  expect_each_once(opens);
  EXPECT_EQ(opens.count("chat_template.json"), 1u);
  EXPECT_EQ(l.model_template, std::optional<std::string>("D"));
  EXPECT_EQ(l.model_template_variants, (std::map<std::string, std::string>{{"tool_use", "T"}}));
}

// export (the offgraph export command's calls): tokenizer keys, weights and
// templates from one reading of the directory.
TEST(ModelSource, ExportReadsEachFileOnce) {
  TempDir tmp;
  const std::string dir = copy_dir(synth_hf(synth::Family::kGemma4), tmp, "gemma4-hf");
  const auto opens = opens_during(dir, [&] {
    const std::shared_ptr<const ModelSource> src = ModelSource::open(dir, /*weights=*/false);  // as the command
    ConvertOptions o;
    o.metadata = tokenizer_gguf_keys(*src->hf());
    export_hf_to_gguf(*src, tmp.path("out.gguf"), o);
  });
  expect_each_once(opens);
  EXPECT_EQ(opens.count("tokenizer_config.json"), 1u);
  ModelSetup s;
  s.model = tmp.path("out.gguf");
  EXPECT_TRUE(load_model(s).model_template.has_value());  // the template went into the file
}

// A separate tokenizer directory is a second source, read once for the
// tokenizer and the template the model lacks.
TEST(ModelSource, SeparateTokenizerDirectoryIsReadOnce) {
  TempDir tmp;
  const std::string model = copy_dir(synth_hf(synth::Family::kGemma4), tmp, "model");
  nlohmann::json tc = read_json_file(model + "/tokenizer_config.json");
  tc.erase("chat_template");  // the template is the tokenizer directory's only
  std::ofstream(model + "/tokenizer_config.json") << tc.dump();
  const std::string tok = tmp.path("tok");
  fs::create_directory(tok);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(synth_hf(synth::Family::kGemma4) + "/" + f, tok + "/" + f);
  ModelSetup s;
  s.model = model;
  s.tokenizer = tok;
  LoadedModel l;
  const auto opens = opens_during(tok, [&] { l = load_model(s); });
  expect_each_once(opens);
  EXPECT_EQ(opens.count("tokenizer_config.json"), 1u);
  EXPECT_TRUE(l.model_template.has_value());
}

TEST(ModelSource, GgufFileIsOpenedOnce) {
  TempDir tmp;
  const std::string path = tmp.path("gemma4.gguf");  // a file with a stored template
  fs::copy_file(synth_gguf(synth::Family::kGemma4), path);
  ModelSetup s;
  s.model = path;
  LoadedModel l;
  const auto opens = opens_during(tmp.path(), [&] { l = load_model(s); });
  EXPECT_EQ(opens.count(""), 0u);
  ASSERT_EQ(opens.count("gemma4.gguf"), 1u);
  EXPECT_EQ(opens.at("gemma4.gguf"), 1);
  EXPECT_TRUE(l.model_template.has_value());
  ASSERT_NE(l.source->gguf(), nullptr);
}
#endif

// The directory is listed once instead of checked name by name; files that are
// symlinks (an HF cache snapshot links each file to a blob) still count.
TEST(ModelSource, SymlinkedFilesOfASnapshotAreFound) {
  TempDir tmp;
  const std::string from = synth_hf(synth::Family::kGemma4);
  const std::string dir = tmp.path("snapshot");
  fs::create_directory(dir);
  for (const auto& e : fs::directory_iterator(from)) fs::create_symlink(e.path(), dir + "/" + e.path().filename().string());
  ModelSetup s;
  s.model = dir;
  const LoadedModel l = load_model(s);
  EXPECT_TRUE(l.model_template.has_value());
  EXPECT_FALSE(l.source->hf()->tokenizer_json_path.empty());
  EXPECT_GT(l.tok->n_vocab(), 0);
}

// The server's facts come from the run's source (Model no longer hands its file back).
TEST(ModelSource, ModelFactsComeFromTheSource) {
  for (const bool hf : {false, true}) {
    ModelSetup s;
    s.model = hf ? synth_hf(synth::Family::kLlama) : synth_gguf(synth::Family::kLlama);
    const LoadedModel l = load_model(s);
    const server::ModelFacts f = server::model_facts(*l.model, *l.source);
    EXPECT_EQ(f.format, hf ? "safetensors" : "gguf");
    EXPECT_GT(f.parameters, 0);
    EXPECT_FALSE(f.quantization.empty());
  }
}

TEST(ModelSource, MissingPathIsOneClearError) {
  try {
    ModelSource::open("/nonexistent/model.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/model.gguf: no such file or directory");
  }
}

}  // namespace
}  // namespace og
