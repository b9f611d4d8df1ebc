# validate residuals -o OUT, then OUT compared with the shipped table byte for byte and the stated
# ranges' held-out coverage checked within 70-90% (ctest validation_residuals_reproduce).
execute_process(COMMAND ${VALIDATE} residuals -q -o ${OUT} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "validate residuals failed (${rc}): ${err}")
endif()
message(STATUS "${err}")
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${SHIPPED} RESULT_VARIABLE differ)
if(NOT differ EQUAL 0)
  message(FATAL_ERROR "${SHIPPED} is not what `validate residuals` writes today (${OUT}): regenerate it with "
                      "build/bin/validate residuals -o validation/residuals.csv")
endif()
string(REGEX MATCH "\\(stated\\): with each source held out, [0-9]+ of [0-9]+ rows inside its range \\(([0-9.]+)%" m "${err}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "no stated coverage line in: ${err}")
endif()
if(CMAKE_MATCH_1 LESS 70 OR CMAKE_MATCH_1 GREATER 90)
  message(FATAL_ERROR "the stated 80% ranges cover ${CMAKE_MATCH_1}% of held-out rows, outside 70-90%")
endif()
