// The Catch2 main of the CPU suite.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
