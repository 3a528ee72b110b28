# SPDX-License-Identifier: Apache-2.0
# redlock_lua_text(PATH OUT_VAR): the text of the Lua script at PATH as it is
# sent to Redis: each line `--#include lib/x.lua` replaced by that file
# (relative to the script's folder). Its SHA1 is the one EVALSHA uses. Shared
# by embed_lua.cmake (the scripts embedded in the library) and the model
# check (test/model/check_script_hashes.cmake), so both hash the same text.
function(redlock_lua_text path out_var)
  file(READ "${path}" text)
  get_filename_component(dir "${path}" DIRECTORY)
  string(REGEX MATCHALL "--#include [^\n]+" includes "${text}")
  foreach(line IN LISTS includes)
    string(REPLACE "--#include " "" included_path "${line}")
    if(NOT EXISTS "${dir}/${included_path}")
      message(FATAL_ERROR "${path}: ${line}: no such file ${dir}/${included_path}")
    endif()
    file(READ "${dir}/${included_path}" included)
    string(REPLACE "${line}" "${included}" text "${text}")
  endforeach()
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()
