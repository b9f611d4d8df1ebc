# Writes OUT with the repository's commit as a C string literal ("" outside a git checkout),
# "-dirty" appended when tracked files differ from it. Run at every build (lib/CMakeLists.txt), so
# a tool built after a pull or an edit reports the commit it was built from; the file changes
# (and build_info.cpp recompiles) only when the text does.
set(commit "")
if(GIT AND EXISTS "${SRC}/.git")
  execute_process(COMMAND ${GIT} -C ${SRC} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  execute_process(COMMAND ${GIT} -C ${SRC} status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE status OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(commit AND status)
    string(APPEND commit "-dirty")
  endif()
endif()
set(text "\"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
