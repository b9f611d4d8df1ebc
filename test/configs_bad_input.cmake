# A command (`configs`, `estimate`) on bad input: exit code 2, nothing on stdout, and an error on
# stderr naming the flag and value (EXPECT, a regular expression). ARGS: the command line,
# arguments separated by '|'.
string(REPLACE "|" ";" args "${ARGS}")
get_filename_component(tool "${CMD}" NAME)
execute_process(COMMAND ${CMD} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "${tool} ${args}: exit ${rc}, expected 2; stderr: ${err}")
endif()
if(NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "${tool} ${args}: stderr does not match '${EXPECT}': ${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "${tool} ${args}: printed to stdout on error: ${out}")
endif()
message(STATUS "exit 2: ${err}")
