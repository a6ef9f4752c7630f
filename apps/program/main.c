/* The `offgraph` program: the command line (apps/cli_main.cpp, og_cli_main) and
 * the server, linked into the program itself; liboffgraph.so is the C API alone. */
int og_cli_main(int argc, const char* const* argv);

int main(int argc, char** argv) { return og_cli_main(argc, (const char* const*)argv); }
