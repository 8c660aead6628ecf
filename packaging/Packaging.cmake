# The Debian package (scripts/package, -DTICKETD_PACKAGE=ON): install rules and CPack's DEB
# generator. Included from the top-level CMakeLists only when packaging, so ordinary builds have
# no install rules and no `package` target. Files and their reasons: docs/packaging.md.
set(TICKETD_MAINTAINER "ticketd maintainers <maintainers@users.noreply.a-seed-06bdaf13.example>"
    CACHE STRING "The Maintainer field of the Debian package")
set(pkg_src ${CMAKE_CURRENT_LIST_DIR})
set(pkg_out ${CMAKE_BINARY_DIR}/packaging)

# `cpack` builds the preinstall target first; it should need ticketd only, not every test.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# The man page carries the version; it and the changelog are gzipped as Debian policy wants
# (-n: no name or time stamp, so the package is reproducible).
configure_file(${pkg_src}/ticketd.1 ${pkg_out}/ticketd.1 @ONLY)
configure_file(${pkg_src}/changelog.in ${pkg_out}/changelog @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/README.md ${pkg_out}/README.md COPYONLY)
configure_file(${PROJECT_SOURCE_DIR}/docs/operations.md ${pkg_out}/operations.md COPYONLY)
set(pkg_docs ${pkg_out}/ticketd.1 ${pkg_out}/changelog ${pkg_out}/README.md
             ${pkg_out}/operations.md)
list(TRANSFORM pkg_docs APPEND .gz OUTPUT_VARIABLE pkg_docs_gz)
add_custom_command(OUTPUT ${pkg_docs_gz} COMMAND gzip -9nkf ${pkg_docs} DEPENDS ${pkg_docs}
                   VERBATIM)
# Built by scripts/package beside ticketd (the preinstall target does not wait for `all`).
add_custom_target(ticketd_package_docs ALL DEPENDS ${pkg_docs_gz})

install(TARGETS ticketd RUNTIME DESTINATION bin)
# As dh_strip does: CPACK_STRIP_FILES strips the symbols, the compiler's .comment goes too.
install(CODE "execute_process(COMMAND ${CMAKE_OBJCOPY} --remove-section=.comment
                              \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/bin/ticketd
                              COMMAND_ERROR_IS_FATAL ANY)")
# Full RELRO, as dpkg-buildflags' hardening=+bindnow gives: a link option only, so reusing the
# Release build directory relinks ticketd and recompiles nothing.
target_link_options(ticketd PRIVATE -Wl,-z,relro,-z,now)
install(FILES ${pkg_src}/ticketd.yaml DESTINATION /etc/ticketd
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
# Debian 12 keeps units in /lib (debhelper's dh_installsystemd does the same).
install(FILES ${pkg_src}/ticketd.service DESTINATION /lib/systemd/system
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(FILES ${pkg_out}/ticketd.1.gz DESTINATION share/man/man1
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(FILES ${pkg_src}/copyright ${pkg_out}/changelog.gz ${pkg_out}/README.md.gz
              ${pkg_out}/operations.md.gz
        DESTINATION share/doc/ticketd PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ticketd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR})
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "durable 64-bit ticket server with MySQL and HTTP front ends")
# The extended description: lines under 80 columns (Debian policy 3.4.1).
set(CPACK_PACKAGE_DESCRIPTION
    "ticketd hands out unique, ordered 64-bit IDs from durable counters kept in
RocksDB, in the Flickr ticket-server tradition: REPLACE INTO Tickets64 over the
MySQL protocol, or JSON over HTTP. A value is never issued twice, across
restarts and crashes. It also serves gapless, Snowflake and UUIDv7 sequences,
hi-lo blocks and worker-ID leases, and runs highly available on etcd.")
# ticketd_<version>_<dpkg --print-architecture>.deb (no Debian revision: a native version).
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${TICKETD_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Shared-library dependencies come from the binary (dpkg-shlibdeps); postinst needs adduser.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${pkg_src}/conffiles;${pkg_src}/postinst;${pkg_src}/prerm;${pkg_src}/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
