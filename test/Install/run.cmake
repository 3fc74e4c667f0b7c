# ctest driver: install the runtime from BUILD_DIR into WORK/prefix, build the consumer against
# it alone, and run it. -DBUILD_DIR= -DSOURCE_DIR= -DWORK=
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${err}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix --component runtime)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${WORK}/build -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${WORK}/prefix)
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/write_bundle ${WORK}/consumer.kbundle)
run(${WORK}/build/open_bundle ${WORK}/consumer.kbundle)
