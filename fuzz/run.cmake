# ctest driver: build the fuzzer with clang (CLANG_CXX) in WORK, write the seed corpus, fuzz the
# bundle reader for SECONDS. -DSOURCE_DIR= -DWORK= -DCLANG_CXX= -DSECONDS=
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(LENGTH "${err}" n)
  if(n GREATER 4000)
    string(SUBSTRING "${err}" 0 4000 err) # libFuzzer logs every new coverage line
  endif()
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DCMAKE_CXX_COMPILER=${CLANG_CXX})
run(${CMAKE_COMMAND} --build ${WORK}/build)
file(MAKE_DIRECTORY ${WORK}/corpus)
run(${WORK}/build/make_corpus ${WORK}/corpus)
run(${WORK}/build/fuzz_bundle_reader ${WORK}/corpus -max_total_time=${SECONDS} -max_len=65536
    -print_final_stats=1 -rss_limit_mb=2048)
