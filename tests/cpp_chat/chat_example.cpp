// offgraph.hpp's chat, compiled by cpp_chat_test.sh with g++ and with clang++
// (C++17, -Wall -Wextra -Werror) against build/liboffgraph.so and run on a
// scripted Qwen 3 model: a tool call, its result sent back, and an answer
// constrained to a JSON schema after the reasoning.
#include <cstdio>
#include <string>

#include "offgraph/offgraph.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: chat_example MODEL\n");
    return 2;
  }
  try {
    offgraph::Model model(argv[1]);
    offgraph::Session session = model.session();
    offgraph::ChatRequest req;
    req.messages.push_back({"user", "Weather in Paris?", {}, {}, {}, {}});
    req.tools.push_back({"get_weather", "Weather now",
                         R"({"type": "object", "properties": {"city": {"enum": ["Paris"]}}, "required": ["city"],
                             "additionalProperties": false})",
                         false});
    req.parallel_tool_calls = false;
    const offgraph::ChatResult call = session.chat(req);
    if (call.tool_calls.size() != 1) throw std::runtime_error("expected one call, got: " + call.generation.text);
    std::printf("%s %s %s\n", call.finish_reason.c_str(), call.tool_calls[0].name.c_str(),
                call.tool_calls[0].arguments.c_str());
    req.messages.push_back({"assistant", std::nullopt, call.reasoning_content, std::nullopt, call.tool_calls,
                            std::nullopt});
    req.messages.push_back({"tool", "sunny", std::nullopt, std::nullopt, {}, call.tool_calls[0].id});
    req.response_format = "json_schema";
    req.json_schema = R"({"type": "object", "properties": {"weather": {"enum": ["sunny"]}}, "required": ["weather"],
                          "additionalProperties": false})";
    offgraph::ChatStream stream = session.chat_stream(req);
    offgraph::ChatDelta d;
    std::string reasoning;
    bool more = true;
    while (more) {
      more = stream.next(&d);
      reasoning += d.reasoning_content;
    }
    const offgraph::ChatResult answer = stream.finish();
    std::string compact;  // the spelled JSON's whitespace left out
    for (char c : answer.content)
      if (c != ' ' && c != '\n' && c != '\t' && c != '\r') compact += c;
    std::printf("%s [%s] %s\n", answer.finish_reason.c_str(), reasoning.c_str(), compact.c_str());
    req.tool_choice = "no_such_tool";
    try {
      session.chat(req);
    } catch (const offgraph::Error& e) {
      std::printf("error: %s\n", e.what());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chat_example: %s\n", e.what());
    return 1;
  }
  return 0;
}
