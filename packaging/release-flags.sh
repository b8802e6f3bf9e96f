# The flags of the release build that packaging ships and the benches measure; sourced with `root` set
# to the repository. Every function in its own section, and the linker lays out first the functions
# `meterwise get` runs (packaging/meterwise.order, made by packaging/profile-order.sh), so a download's
# code sits together: peak RSS of `get` 27.7 -> 23.5 MiB (bench/README.md, "download"). The static
# standard library is built with function sections already.
release_flags=(
    --static-swift-stdlib
    -Xswiftc -Xfrontend -Xswiftc -function-sections
    -Xcc -ffunction-sections
    -Xlinker "--symbol-ordering-file=$root/packaging/meterwise.order"
    -Xlinker --no-warn-symbol-ordering
)
