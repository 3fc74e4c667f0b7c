# Mirrors the kiln package sources (SRC) into the build tree (DST): copies SRC over DST and
# removes the .py files of DST that SRC no longer has, so that a module moved or deleted in
# the checkout does not stay importable from the build tree. The extensions built into DST
# (kiln._C, kiln._runtime) are left alone.
file(GLOB_RECURSE stale RELATIVE "${DST}" "${DST}/*.py")
foreach(f IN LISTS stale)
  if(NOT EXISTS "${SRC}/${f}")
    file(REMOVE "${DST}/${f}")
  endif()
endforeach()
file(COPY "${SRC}/" DESTINATION "${DST}" PATTERN "__pycache__" EXCLUDE)
