// offgraph batch with images (docs/batch.md): a JSON line's chat with an
// image_url part (a data: URL) goes through the model's tower and the
// scheduler, and gives run --image's greedy text; the same line twice gives
// the same text; without a tower the line is refused naming the part. On
// og-synth's tiny Gemma 3 vision model and a PNG written here. serve's /tokenize
// with an image part counts the image's rows, as the chat request runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "serve_util.h"

namespace og::e2e {
namespace {

uint32_t crc32(const std::string& s) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xffffffffu;
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

// A w x h RGB PNG whose pixel data is one stored (uncompressed) deflate block.
std::string png(int w, int h, int seed) {
  std::string raw;
  for (int y = 0; y < h; ++y) {
    raw += '\0';  // filter: none
    for (int x = 0; x < w * 3; ++x) raw += static_cast<char>((x * 29 + y * 13 + seed * 101) % 256);
  }
  uint32_t a = 1, b = 0;
  for (unsigned char ch : raw) {
    a = (a + ch) % 65521;
    b = (b + a) % 65521;
  }
  const uint16_t len = static_cast<uint16_t>(raw.size());
  std::string z = {'\x78', '\x01', '\x01', static_cast<char>(len & 0xff), static_cast<char>(len >> 8),
                   static_cast<char>(~len & 0xff), static_cast<char>((~len >> 8) & 0xff)};
  z += raw + be32((b << 16) | a);
  auto chunk = [](const std::string& type, const std::string& data) {
    return be32(static_cast<uint32_t>(data.size())) + type + data + be32(crc32(type + data));
  };
  const std::string ihdr = be32(w) + be32(h) + std::string("\x08\x02\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", "");
}

std::string base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += k[(v >> s) & 63];
  }
  if (i < in.size()) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (i + 1 < in.size() ? uint8_t(in[i + 1]) << 8 : 0);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

struct VisionFiles {
  std::string model, mmproj, image;
};

// og-synth's tiny Gemma 3 vision model, its mmproj and a PNG, written once.
const VisionFiles& files() {
  static const VisionFiles f = [] {
    VisionFiles v{scratch_dir() + "/batch-vision.gguf", scratch_dir() + "/batch-vision-mmproj.gguf",
                  scratch_dir() + "/batch-vision.png"};
    const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth --family gemma3 --vision --format gguf --out " +
                            v.model + " --mmproj-out " + v.mmproj + " >/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ofstream(v.image, std::ios::binary) << png(20, 14, 3);
    return v;
  }();
  return f;
}

// Text as batch's text format writes it on one line.
std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out;
}

std::string image_line(const std::string& text) {
  const nlohmann::json part = {{"type", "image_url"},
                               {"image_url", {{"url", "data:image/png;base64," + base64(png(20, 14, 3))}}}};
  const nlohmann::json line = {
      {"messages", {{{"role", "user"}, {"content", {part, {{"type", "text"}, {"text", text}}}}}}},
      {"max_new_tokens", 8}};
  return line.dump();
}

TEST(BatchImage, AnImageLineGivesRunImagesTextAndTheSameTwice) {
  const VisionFiles& f = files();
  const Proc run = offgraph({"run", "--model", f.model, "--mmproj", f.mmproj, "--image", f.image, "--prompt",
                             "What is it?", "--max-new-tokens", "8"});
  ASSERT_EQ(run.code, 0) << run.err;
  const std::string path = scratch_dir() + "/images.jsonl";
  std::ofstream(path) << image_line("What is it?") << "\n" << "Once upon a time\n" << image_line("What is it?") << "\n";
  const Proc p = offgraph({"batch", "--model", f.model, "--mmproj", f.mmproj, "--prompts-file", path,
                           "--max-new-tokens", "8"});
  ASSERT_EQ(p.code, 0) << p.err;
  const auto outs = lines(p.out);
  ASSERT_EQ(outs.size(), 3u) << p.out;
  EXPECT_EQ(outs[0], one_line(run.out));
  EXPECT_EQ(outs[2], outs[0]);
}

TEST(BatchImage, AnImageLineWithoutATowerIsRefusedNamingThePart) {
  const VisionFiles& f = files();
  const std::string path = scratch_dir() + "/images-notower.jsonl";
  std::ofstream(path) << "Once upon a time\n" << image_line("What is it?") << "\n";
  const Proc p = offgraph({"batch", "--model", f.model, "--prompts-file", path, "--max-new-tokens", "4"});
  EXPECT_EQ(p.code, 1) << p.err;
  EXPECT_NE(p.err.find("images-notower.jsonl:2: 'messages[0].content[0]' is an image and this model has no vision "
                       "tower (pass --mmproj FILE)"),
            std::string::npos)
      << p.err;
  EXPECT_EQ(lines(p.err).size(), 1u) << p.err;
}

nlohmann::json post(const ServeProc& s, const std::string& path, const nlohmann::json& body) {
  const Proc p = run_tool({"curl", "-sS", "--max-time", "60", "-H", "Content-Type: application/json", "-d",
                           body.dump(), s.url() + path});
  EXPECT_EQ(p.code, 0) << p.err;
  return nlohmann::json::parse(p.out, nullptr, false);
}

// /tokenize answers the prompt the chat request runs (vLLM's counts the
// expanded placeholders): the image's 4 rows of <image_soft_token> (516),
// as many tokens as the completion's prompt_tokens; without a tower, the
// chat route's 400 naming the part.
TEST(ServeImage, TokenizeCountsTheImagesRows) {
  const VisionFiles& f = files();
  const nlohmann::json messages = nlohmann::json::parse(image_line("What is it?"))["messages"];
  ServeProc s({"--model", f.model, "--mmproj", f.mmproj});
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  const nlohmann::json tok = post(s, "/tokenize", {{"messages", messages}});
  ASSERT_TRUE(tok.contains("tokens")) << tok.dump();
  const std::vector<int32_t> ids = tok["tokens"].get<std::vector<int32_t>>();
  const auto first = std::find(ids.begin(), ids.end(), 516);
  ASSERT_NE(first, ids.end()) << tok.dump();
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 516), 4) << tok.dump();
  ASSERT_GE(ids.end() - first, 4) << tok.dump();
  EXPECT_TRUE(std::all_of(first, first + 4, [](int32_t id) { return id == 516; })) << tok.dump();
  const nlohmann::json chat = post(s, "/v1/chat/completions", {{"messages", messages}, {"max_tokens", 1}});
  EXPECT_EQ(tok["count"], chat["usage"]["prompt_tokens"]) << chat.dump();
  EXPECT_EQ(tok["count"], ids.size());
  // Text-only messages are as before.
  const nlohmann::json text = post(s, "/tokenize", {{"messages", {{{"role", "user"}, {"content", "What is it?"}}}}});
  EXPECT_EQ(std::count(text["tokens"].begin(), text["tokens"].end(), 516), 0) << text.dump();
  EXPECT_EQ(s.stop(), 143) << s.stderr_text();
  ServeProc plain({"--model", f.model});
  ASSERT_TRUE(plain.ready()) << plain.stderr_text();
  const nlohmann::json refused = post(plain, "/tokenize", {{"messages", messages}});
  EXPECT_EQ(refused["error"]["param"], "messages[0].content[0]") << refused.dump();
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("this model has no vision tower"), std::string::npos)
      << refused.dump();
  EXPECT_EQ(plain.stop(), 143) << plain.stderr_text();
}

}  // namespace
}  // namespace og::e2e
