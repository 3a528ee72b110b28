// SPDX-License-Identifier: Apache-2.0
// Nothing: the target that builds the programs' precompiled header
// (cmake/program_pch.cmake) needs one source of its own.
