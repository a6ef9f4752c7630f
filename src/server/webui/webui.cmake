# The chat page's files, embedded into og_server at build time (embed.cmake):
# editing one of them rebuilds only the generated source.
set(OG_WEBUI_FILES index.html style.css app.js)
set(OG_WEBUI_DIR "${CMAKE_SOURCE_DIR}/src/server/webui")
set(OG_WEBUI_CPP "${CMAKE_BINARY_DIR}/generated/webui_assets.cpp")
list(TRANSFORM OG_WEBUI_FILES PREPEND "${OG_WEBUI_DIR}/" OUTPUT_VARIABLE og_webui_deps)
add_custom_command(
  OUTPUT "${OG_WEBUI_CPP}"
  COMMAND ${CMAKE_COMMAND} -DSRC=${OG_WEBUI_DIR} "-DFILES=${OG_WEBUI_FILES}" -DOUT=${OG_WEBUI_CPP}
          -P "${OG_WEBUI_DIR}/embed.cmake"
  DEPENDS ${og_webui_deps} "${OG_WEBUI_DIR}/embed.cmake"
  COMMENT "Embedding the chat page (src/server/webui)"
  VERBATIM)
target_sources(og_server PRIVATE "${OG_WEBUI_CPP}")
