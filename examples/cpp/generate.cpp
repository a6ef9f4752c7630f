// A minimal C++ program over liboffgraph through offgraph.hpp (RAII): greedy
// generation, then the batched engine. Built with find_package(offgraph)
// (examples/cpp/CMakeLists.txt). Run: ./generate MODEL.gguf
#include <offgraph/offgraph.hpp>

#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " MODEL\n";
    return 2;
  }
  try {
    offgraph::Model model(argv[1]);
    offgraph::Session session = model.session();
    og_generate_options opts = offgraph::default_generate_options();
    opts.max_new_tokens = 60;
    const offgraph::Generation g = session.generate(model.encode("Once upon a time"), opts);
    std::cout << "Once upon a time" << g.text << "\n";

    offgraph::Engine engine(model);
    const uint64_t id = engine.submit(model.encode("Once upon a time"), opts);
    og_finish_reason reason;
    const offgraph::Generation b = engine.collect(id, &reason);
    std::cout << "engine: " << (b.text == g.text ? "same" : "different") << " ("
              << og_finish_reason_name(reason) << ")\n";
    session.rewind(100);  // past the history: throws
  } catch (const offgraph::Error& e) {
    std::cout << "error: " << e.what() << "\n";
    return 0;
  }
  return 1;
}
