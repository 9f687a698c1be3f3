// cuscope/cuscope.hpp — the one header a program includes.
//
// Example:
//   #include <cuscope/cuscope.hpp>
//   for (int step = 0; step < steps; ++step) {
//     CUSCOPE_SCOPE("step", stream);
//     { CUSCOPE_SCOPE("forward", stream); forward(stream); }
//     { CUSCOPE_SCOPE("backward", stream); backward(stream); }
//     cuscope::step();
//   }
//   // at exit: a table of every range with host, CUDA-event and kernel times
#pragma once

#include <cuscope/report.hpp>
#include <cuscope/scope.hpp>
#include <cuscope/session.hpp>
#include <cuscope/version.hpp>
