// estimate's main as estimate_tool, for the Python module (apps/python/module.cpp).
#define PERFSWEEP_TOOL_ENTRY estimate_tool
#include "estimate/main.cpp"
