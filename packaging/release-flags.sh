# The flags of the release build that packaging ships and the benches measure; sourced with `root` set
# to the repository. Every function in its own section, so the linker can lay out first the functions
# `meterwise get` runs (packaging/meterwise.order, made by packaging/profile-order.sh) and a download's
# code sits together: peak RSS of `get` 27.7 -> 23.5 MiB (bench/README.md, "download"). The static
# standard library is built with function sections already.
#
# Only compiler flags and the static standard library belong here: they reach every product the build
# makes (meterwise, and generate-manual for the man pages). The ordering file is an option of lld, which
# links meterwise alone, so Package.swift gives it to that product's release link and no other; as an
# -Xlinker flag here it failed the package on a fresh clone (gold links generate-manual: "unknown option").
release_flags=(
    --static-swift-stdlib
    -Xswiftc -Xfrontend -Xswiftc -function-sections
    -Xcc -ffunction-sections
)
