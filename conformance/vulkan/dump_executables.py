#!/usr/bin/env python3
"""Prints the Vulkan executables (`vulkan-spirv-fb`) a `.vmfb` embeds, field by field.

Each executable is IREE's 64-byte header (magic `VKE1`, version u32, content size u64, 48
reserved bytes) followed by a FlatBuffer with the file identifier `VKE1` whose root is IREE's
`ExecutableDef`. This reader knows the tables by slot number only (no schema file, no
flatbuffers package), so it also shows which slots a real module fills:

  ExecutableDef: 0 pipelines, 1 descriptor_set_layouts, 2 pipeline_layouts, 3 shader_modules,
                 4 source_files
  PipelineDef: 0 shader_module_ordinal u32, 1 entry_point string, 2 pipeline_layout_ordinal
               u32, 3 subgroup_size u32, 4 debug_info ExportDef, 5 dispatch_abi u8,
               6 bda_dispatch_layout
  DescriptorSetLayoutDef: 0 bindings; DescriptorSetLayoutBindingDef: 0 binding u32,
               1 descriptor_type u32, 2 descriptor_count u32, 3 stage_flags u32
  PipelineLayoutDef: 0 descriptor_set_layout_ordinals [u32], 1 push_constant_ranges
               [struct {stage_flags, offset, size: u32}]
  ShaderModuleDef: 0 spirv_code [u32]
  ExportDef: 0 name string, 1 location FileLineLocDef (0 filename, 1 line i32)

Usage: dump_executables.py MODULE.vmfb
"""

from __future__ import annotations

import struct
import sys

HEADER = 64


class Table:
    """A FlatBuffer table at `pos` of `data`: fields by slot, defaults when absent."""

    def __init__(self, data: bytes, pos: int):
        self.data, self.pos = data, pos
        self.vtable = pos - struct.unpack_from("<i", data, pos)[0]
        self.vtable_size = struct.unpack_from("<H", data, self.vtable)[0]

    def field_offset(self, slot: int) -> int:
        entry = 4 + 2 * slot
        if entry >= self.vtable_size:
            return 0
        return struct.unpack_from("<H", self.data, self.vtable + entry)[0]

    def present(self) -> list:
        return [s for s in range((self.vtable_size - 4) // 2) if self.field_offset(s)]

    def scalar(self, slot: int, fmt: str = "<I", default=0):
        offset = self.field_offset(slot)
        return struct.unpack_from(fmt, self.data, self.pos + offset)[0] if offset else default

    def _target(self, slot: int):
        offset = self.field_offset(slot)
        if not offset:
            return None
        at = self.pos + offset
        return at + struct.unpack_from("<I", self.data, at)[0]

    def table(self, slot: int):
        at = self._target(slot)
        return None if at is None else Table(self.data, at)

    def vector(self, slot: int):
        """(first element position, length) or None."""
        at = self._target(slot)
        return None if at is None else (at + 4, struct.unpack_from("<I", self.data, at)[0])

    def tables(self, slot: int) -> list:
        vector = self.vector(slot)
        if vector is None:
            return []
        start, count = vector
        return [Table(self.data, start + 4 * i + struct.unpack_from("<I", self.data, start + 4 * i)[0])
                for i in range(count)]

    def string(self, slot: int):
        vector = self.vector(slot)
        return None if vector is None else self.data[vector[0]:vector[0] + vector[1]].decode()

    def u32s(self, slot: int) -> list:
        vector = self.vector(slot)
        return [] if vector is None else list(struct.unpack_from(f"<{vector[1]}I", self.data, vector[0]))


def describe(flatbuffer: bytes) -> list:
    root = Table(flatbuffer, struct.unpack_from("<I", flatbuffer, 0)[0])
    lines = [f"  identifier {flatbuffer[4:8].decode(errors='replace')!r}, "
             f"root slots present {root.present()}"]
    for i, pipeline in enumerate(root.tables(0)):
        debug = pipeline.table(4)
        location = debug.table(1) if debug else None
        lines.append(
            f"  pipeline[{i}]: entry_point {pipeline.string(1)!r}, shader_module "
            f"{pipeline.scalar(0)}, pipeline_layout {pipeline.scalar(2)}, subgroup_size "
            f"{pipeline.scalar(3)}, dispatch_abi {pipeline.scalar(5, '<B')}, bda layout "
            f"{'yes' if pipeline.field_offset(6) else 'no'}, debug name "
            f"{debug.string(0) if debug else None!r} at "
            f"{(location.string(0), location.scalar(1, '<i')) if location else None}")
    for i, layout in enumerate(root.tables(1)):
        bindings = [f"binding {b.scalar(0)} type {b.scalar(1)} count {b.scalar(2)} "
                    f"stages {b.scalar(3):#x}" for b in layout.tables(0)]
        lines.append(f"  descriptor_set_layout[{i}]: {'; '.join(bindings) or 'empty'}")
    for i, layout in enumerate(root.tables(2)):
        ranges = layout.vector(1)
        pushes = [] if ranges is None else [
            "stages {:#x} offset {} size {}".format(*struct.unpack_from("<III", flatbuffer, ranges[0] + 12 * k))
            for k in range(ranges[1])]
        lines.append(f"  pipeline_layout[{i}]: sets {layout.u32s(0)}, push constant ranges "
                     f"{pushes or 'none'}")
    for i, module in enumerate(root.tables(3)):
        words = module.u32s(0)
        lines.append(f"  shader_module[{i}]: {len(words)} SPIR-V words, magic "
                     f"{words[0] if words else 0:#010x}")
    return lines


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[-1])
    data = open(sys.argv[1], "rb").read()
    found = 0
    at = data.find(b"VKE1\0\0\0\0")
    while at >= 0:
        size = struct.unpack_from("<Q", data, at + 8)[0]
        if size == 0 or at + HEADER + size > len(data):
            at = data.find(b"VKE1\0\0\0\0", at + 1)
            continue
        found += 1
        print(f"executable at byte {at}: content size {size}")
        print("\n".join(describe(data[at + HEADER:at + HEADER + size])))
        at = data.find(b"VKE1\0\0\0\0", at + HEADER + size)
    if not found:
        print(f"{sys.argv[1]}: no vulkan-spirv-fb executable found")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
