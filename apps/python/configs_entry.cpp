// configs' main as configs_tool, for the Python module (apps/python/module.cpp).
#define PERFSWEEP_TOOL_ENTRY configs_tool
#include "configs/main.cpp"
