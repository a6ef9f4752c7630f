/* The `offgraph` program: a client of liboffgraph.so like any other. All of the
 * command line lives in the library behind og_cli_main (apps/cli_main.cpp), so the
 * program and every embedder run the same engine from one shared object. */
#include <offgraph/offgraph.h>

int main(int argc, char** argv) { return og_cli_main(argc, (const char* const*)argv); }
