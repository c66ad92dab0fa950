//! A loaded `embedded-elf-*` executable: IREE's executable library ABI (version 6) over a
//! [`CodeMapping`].
//!
//! The library's tables (header, imports, exports, attributes, names) are read by safe code
//! from the relocated image the mapping keeps, with every pointer checked to lie inside it.
//! The only unsafe acts are the calls into the library's code: `query` once at load, then
//! one dispatch function call per workgroup. That machine code is trusted: pactum cannot
//! sandbox it (see the HAL's module docs).
//!
//! ("ELF" names the file format; "native" is kept for VM modules written in Rust.)

use std::ffi::c_void;
use std::mem::offset_of;

use pactum_sys::iree_hal::{
    IREE_HAL_EXECUTABLE_LIBRARY_SANITIZER_NONE, IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST,
    IREE_HAL_EXECUTABLE_MAX_BINDING_COUNT, IREE_HAL_WORKGROUP_LOCAL_MEMORY_PAGE_SIZE,
    IreeHalExecutableDispatchAttrsV0 as Attrs, IreeHalExecutableDispatchFn,
    IreeHalExecutableDispatchStateV0 as DispatchState,
    IreeHalExecutableEnvironmentV0 as Environment, IreeHalExecutableExportTableV0 as ExportTable,
    IreeHalExecutableImportFn, IreeHalExecutableLibraryHeader as Header,
    IreeHalExecutableLibraryQueryFn, IreeHalExecutableLibraryV0 as Library,
    IreeHalExecutableWorkgroupStateV0 as WorkgroupState, IreeHalProcessorV0,
};

use super::elf::{ElfImage, HOST_ARCH};
use super::mapping::CodeMapping;
use crate::fpu::FlushDenormals;
use crate::hal::buffer::{Binding, DispatchBinding};
use crate::hal::workers::Workers;
use crate::host_memory::HostMemory;
use crate::status::{StatusCode, StatusError};

fn invalid(message: impl Into<String>) -> StatusError {
    StatusError::invalid_argument(message)
}

/// The most exports a library may declare.
const MAX_EXPORTS: u32 = 1 << 16;

/// One export of the library.
struct Export {
    name: String,
    function: IreeHalExecutableDispatchFn,
    attrs: Attrs,
}

/// A loaded ELF executable library.
pub struct ElfExecutable {
    name: String,
    exports: Vec<Export>,
    // The environment points into these two; boxed so that their addresses never move.
    environment: Box<Environment>,
    _constants: Box<[u32]>,
    _imports: Box<[Option<IreeHalExecutableImportFn>]>,
    // Last: every function pointer above points into it.
    mapping: CodeMapping,
}

// SAFETY: the environment's pointers refer to boxes owned by the executable and are only
// read (by the library's code); the mapping is immutable once loaded; calls from several
// threads at once are how IREE's task executor runs libraries, which are written for it.
unsafe impl Send for ElfExecutable {}
// SAFETY: as above.
unsafe impl Sync for ElfExecutable {}

impl std::fmt::Debug for ElfExecutable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElfExecutable")
            .field("name", &self.name)
            .field("exports", &self.exports.len())
            .field("base", &format_args!("{:#x}", self.mapping.base()))
            .finish()
    }
}

fn failed(status: StatusCode, message: impl Into<String>) -> StatusError {
    StatusError::new(status, message)
}

/// Bounds-checked reads of the loaded image, by absolute address.
struct Image<'a>(&'a CodeMapping);

impl Image<'_> {
    fn bytes(&self, address: u64, len: usize, what: &str) -> Result<&[u8], StatusError> {
        self.0
            .offset_of(address)
            .and_then(|o| {
                self.0
                    .image()
                    .get(o as usize..(o as usize).checked_add(len)?)
            })
            .ok_or_else(|| {
                invalid(format!(
                    "executable library: {what} at {address:#x} is outside the loaded image"
                ))
            })
    }

    fn u64(&self, address: u64, what: &str) -> Result<u64, StatusError> {
        let b = self.bytes(address, 8, what)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }

    fn u32(&self, address: u64, what: &str) -> Result<u32, StatusError> {
        let b = self.bytes(address, 4, what)?;
        Ok(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
    }

    fn c_str(&self, address: u64, what: &str) -> Result<String, StatusError> {
        let start = self.0.offset_of(address).ok_or_else(|| {
            invalid(format!(
                "executable library: {what} at {address:#x} is outside the loaded image"
            ))
        })? as usize;
        let tail = &self.0.image()[start..];
        let end = tail
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| invalid(format!("executable library: {what} is not NUL-terminated")))?;
        Ok(String::from_utf8_lossy(&tail[..end]).into_owned())
    }
}

/// IREE's processor data for this CPU: on x86_64, word 0 holds the feature bits of IREE's
/// `cpu_feature_bits.inl` (ukernels pick their code paths from them).
fn processor() -> IreeHalProcessorV0 {
    #[allow(unused_mut)]
    let mut data = [0u64; 8];
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! bits {
            ($($feature:tt => $bit:expr),* $(,)?) => {
                $(if std::is_x86_feature_detected!($feature) { data[0] |= 1 << $bit; })*
            };
        }
        bits!(
            "sse3" => 0, "ssse3" => 1, "sse4.1" => 2, "sse4.2" => 3, "sse4a" => 4,
            "avx" => 10, "fma" => 11, "f16c" => 14, "avx2" => 15,
            "avx512f" => 20, "avx512cd" => 21, "avx512vl" => 22, "avx512dq" => 23,
            "avx512bw" => 24, "avx512ifma" => 25, "avx512vbmi" => 26,
            "avx512vpopcntdq" => 27, "avx512vnni" => 28, "avx512vbmi2" => 29,
            "avx512bitalg" => 30, "avx512bf16" => 31, "avx512fp16" => 32,
        );
    }
    IreeHalProcessorV0 { data }
}

impl ElfExecutable {
    /// Loads an `embedded-elf-<arch>` executable with its executable-level `constants`.
    pub fn load(data: &[u8], constants: &[u32]) -> Result<ElfExecutable, StatusError> {
        let arch = HOST_ARCH.ok_or_else(|| {
            failed(
                StatusCode::Unimplemented,
                "embedded ELF executables are not supported on this architecture",
            )
        })?;
        let elf = ElfImage::parse(data, arch).map_err(|e| {
            let status = if e.unsupported {
                StatusCode::Unimplemented
            } else {
                StatusCode::InvalidArgument
            };
            failed(status, e.to_string())
        })?;
        let mapping = CodeMapping::load(&elf)
            .map_err(|e| failed(StatusCode::ResourceExhausted, e.to_string()))?;
        let base = mapping.base();

        let constants: Box<[u32]> = constants.into();
        let mut environment = Box::new(Environment {
            // The library reads the constants as u32: the same bits, the same layout as i32.
            constants: constants.as_ptr().cast::<u32>(),
            import_thunk: None,
            import_funcs: std::ptr::null(),
            import_contexts: std::ptr::null(),
            processor: processor(),
        });
        let query_address = base + elf.query;
        // SAFETY: `elf.query` is the defined dynamic symbol `iree_hal_executable_library_query`,
        // checked to lie in an executable segment of the mapping, which is loaded, relocated,
        // protected, and kept alive by the executable; IREE's ABI gives it this signature.
        let query: IreeHalExecutableLibraryQueryFn = unsafe {
            std::mem::transmute::<usize, IreeHalExecutableLibraryQueryFn>(query_address as usize)
        };
        // SAFETY: calling the library's query with a valid environment, as IREE's loader does.
        let library =
            unsafe { query(IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST, &*environment) } as u64;
        if library == 0 {
            return Err(failed(
                StatusCode::FailedPrecondition,
                format!(
                    "executable does not support this version of the runtime ({:08X})",
                    IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST
                ),
            ));
        }
        let image = Image(&mapping);
        let header = image.u64(library, "library")?;
        let version = image.u32(header + offset_of!(Header, version) as u64, "header")?;
        if version != IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST {
            return Err(failed(
                StatusCode::FailedPrecondition,
                format!(
                    "executable library has version {version}; pactum reads version {}",
                    IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST
                ),
            ));
        }
        let name_address = image.u64(header + offset_of!(Header, name) as u64, "header")?;
        let name = image.c_str(name_address, "library name")?;
        let sanitizer = image.u32(header + offset_of!(Header, sanitizer) as u64, "header")? as i32;
        if sanitizer != IREE_HAL_EXECUTABLE_LIBRARY_SANITIZER_NONE {
            return Err(failed(
                StatusCode::Unavailable,
                format!(
                    "executable requires sanitizer but they are not yet supported with \
                     embedded libraries: {sanitizer}"
                ),
            ));
        }

        // Imports: pactum provides none; weak ones (`name?`) stay NULL.
        let imports_at = library + offset_of!(Library, imports) as u64;
        let import_count = image.u32(imports_at, "import table")?;
        if import_count > MAX_EXPORTS {
            return Err(invalid(format!(
                "executable library declares {import_count} imports"
            )));
        }
        let imports: Box<[Option<IreeHalExecutableImportFn>]> =
            vec![None; import_count as usize].into();
        if import_count > 0 {
            let symbols = image.u64(imports_at + 8, "import table")?;
            for k in 0..u64::from(import_count) {
                let symbol = image.u64(symbols + 8 * k, "import symbol")?;
                let symbol = image.c_str(symbol, "import symbol")?;
                if !symbol.ends_with('?') {
                    return Err(failed(
                        StatusCode::NotFound,
                        format!(
                            "executable `{name}` imports `{symbol}`, which pactum does not provide"
                        ),
                    ));
                }
            }
            environment.import_funcs = imports.as_ptr();
        }

        let declared_constants = image.u32(
            library + offset_of!(Library, constants) as u64,
            "constant table",
        )?;
        if declared_constants as usize > constants.len() {
            return Err(invalid(format!(
                "executable `{name}` takes {declared_constants} constants, {} were given",
                constants.len()
            )));
        }

        let table = library + offset_of!(Library, exports) as u64;
        let count = image.u32(
            table + offset_of!(ExportTable, count) as u64,
            "export table",
        )?;
        if count > MAX_EXPORTS {
            return Err(invalid(format!(
                "executable library declares {count} exports"
            )));
        }
        let pointer = |field: usize| image.u64(table + field as u64, "export table");
        let (ptrs, attrs, names) = (
            pointer(offset_of!(ExportTable, ptrs))?,
            pointer(offset_of!(ExportTable, attrs))?,
            pointer(offset_of!(ExportTable, names))?,
        );
        let mut exports = Vec::with_capacity(count as usize);
        for k in 0..u64::from(count) {
            let function = image.u64(ptrs + 8 * k, "export function")?;
            let offset = mapping.offset_of(function).filter(|&o| elf.is_code(o));
            if offset.is_none() {
                return Err(invalid(format!(
                    "export {k} of `{name}` points at {function:#x}, outside the executable's code"
                )));
            }
            // SAFETY: `function` lies in an executable segment of the mapping kept alive with
            // the export; the library declares it a dispatch function of this signature.
            let function = unsafe {
                std::mem::transmute::<usize, IreeHalExecutableDispatchFn>(function as usize)
            };
            let attrs = if attrs == 0 {
                Attrs::default()
            } else {
                let at = attrs + (std::mem::size_of::<Attrs>() as u64) * k;
                let b = image.bytes(at, std::mem::size_of::<Attrs>(), "export attributes")?;
                let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
                let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
                Attrs {
                    flags: u64::from(u32_at(0)) | (u64::from(u32_at(4)) << 32),
                    local_memory_pages: u16_at(offset_of!(Attrs, local_memory_pages)),
                    constant_count: b[offset_of!(Attrs, constant_count)],
                    binding_count: b[offset_of!(Attrs, binding_count)],
                    workgroup_size_x: u32_at(offset_of!(Attrs, workgroup_size_x)),
                    workgroup_size_y: u32_at(offset_of!(Attrs, workgroup_size_y)),
                    workgroup_size_z: u16_at(offset_of!(Attrs, workgroup_size_z)),
                    parameter_count: u16_at(offset_of!(Attrs, parameter_count)),
                    reserved_1: [0; 5],
                }
            };
            let export_name = if names == 0 {
                format!("{name}_{k}")
            } else {
                let at = image.u64(names + 8 * k, "export name")?;
                image.c_str(at, "export name")?
            };
            exports.push(Export {
                name: export_name,
                function,
                attrs,
            });
        }
        Ok(ElfExecutable {
            name,
            exports,
            environment,
            _constants: constants,
            _imports: imports,
            mapping,
        })
    }

    /// The library's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name of every export, by ordinal.
    pub fn export_names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.exports.iter().map(|e| e.name.as_str())
    }

    /// The name of export `ordinal`.
    pub fn export_name(&self, ordinal: usize) -> Option<&str> {
        self.exports.get(ordinal).map(|e| e.name.as_str())
    }

    /// Runs export `ordinal` over a grid of `count` workgroups (at least one) on `workers`.
    pub fn dispatch(
        &self,
        ordinal: usize,
        count: [u32; 3],
        constants: &[i32],
        bindings: &[Binding],
        workers: &Workers,
    ) -> Result<(), StatusError> {
        self.dispatch_bindings(ordinal, count, constants, bindings, workers)
    }

    /// [`ElfExecutable::dispatch`] with bindings of any form (borrowed, by a replay).
    pub(crate) fn dispatch_bindings(
        &self,
        ordinal: usize,
        count: [u32; 3],
        constants: &[i32],
        bindings: &[impl DispatchBinding],
        workers: &Workers,
    ) -> Result<(), StatusError> {
        let export = self.exports.get(ordinal).ok_or_else(|| {
            invalid(format!(
                "executable `{}` has no export {ordinal} ({} exports)",
                self.name,
                self.exports.len()
            ))
        })?;
        let attrs = &export.attrs;
        if constants.len() != usize::from(attrs.constant_count) {
            return Err(invalid(format!(
                "constant count mismatch, expected {} but was provided {}",
                attrs.constant_count,
                constants.len()
            )));
        }
        if bindings.len() != usize::from(attrs.binding_count)
            || bindings.len() > IREE_HAL_EXECUTABLE_MAX_BINDING_COUNT
        {
            return Err(invalid(format!(
                "binding count mismatch, expected {} but was provided {}",
                attrs.binding_count,
                bindings.len()
            )));
        }
        let count_z = u16::try_from(count[2])
            .map_err(|_| invalid(format!("workgroup count z {} exceeds 65535", count[2])))?;
        // On the stack for the few bindings most dispatches have, so that those allocate
        // nothing.
        const INLINE_BINDINGS: usize = 8;
        let mut inline_pointers = [std::ptr::null_mut::<c_void>(); INLINE_BINDINGS];
        let mut inline_lengths = [0usize; INLINE_BINDINGS];
        let (mut heap_pointers, mut heap_lengths);
        let (pointers, lengths): (&mut [*mut c_void], &mut [usize]) =
            if bindings.len() <= INLINE_BINDINGS {
                (&mut inline_pointers, &mut inline_lengths)
            } else {
                heap_pointers = vec![std::ptr::null_mut::<c_void>(); bindings.len()];
                heap_lengths = vec![0usize; bindings.len()];
                (&mut heap_pointers, &mut heap_lengths)
            };
        for (k, binding) in bindings.iter().enumerate() {
            let (pointer, length) = binding
                .buffer()
                .raw_range(binding.offset(), binding.length())
                .map_err(|e| StatusError::new(e.status, format!("binding {k}: {e}")))?;
            pointers[k] = pointer.cast::<c_void>();
            lengths[k] = length;
        }
        let state = DispatchState {
            workgroup_size_x: attrs.workgroup_size_x.max(1),
            workgroup_size_y: attrs.workgroup_size_y.max(1),
            workgroup_size_z: attrs.workgroup_size_z.max(1),
            constant_count: u16::from(attrs.constant_count),
            workgroup_count_x: count[0],
            workgroup_count_y: count[1],
            workgroup_count_z: count_z,
            max_concurrency: workers.concurrency().min(255) as u8,
            binding_count: attrs.binding_count,
            // The library reads the constants as u32: the same bits, the same layout as i32.
            constants: constants.as_ptr().cast::<u32>(),
            binding_ptrs: pointers.as_ptr(),
            binding_lengths: lengths.as_ptr(),
        };
        let local_memory_size =
            usize::from(attrs.local_memory_pages) * IREE_HAL_WORKGROUP_LOCAL_MEMORY_PAGE_SIZE;
        let call = Call {
            function: export.function,
            environment: &self.environment,
            state: &state,
            local_memory_size,
            name: &export.name,
        };
        let total = u64::from(count[0]) * u64::from(count[1]) * u64::from(count_z);
        workers.run_workgroups(
            total,
            || Ok((FlushDenormals::on(), call.local_memory()?)),
            |(_, memory), index, processor| call.run(index, processor, memory),
        )
    }
}

/// One dispatch, shared by the threads running its workgroups.
struct Call<'a> {
    function: IreeHalExecutableDispatchFn,
    environment: &'a Environment,
    state: &'a DispatchState,
    local_memory_size: usize,
    name: &'a str,
}

// SAFETY: the environment and dispatch state are read-only during the dispatch; the pointers
// they hold (constants, bindings, imports) stay valid until `dispatch` returns, which waits
// for every workgroup. Workgroups writing the same binding bytes is the compiled code's
// contract, as in IREE's task executor.
unsafe impl Sync for Call<'_> {}

impl Call<'_> {
    fn local_memory(&self) -> Result<Option<HostMemory>, StatusError> {
        if self.local_memory_size == 0 {
            return Ok(None);
        }
        HostMemory::zeroed(self.local_memory_size)
            .map(Some)
            .ok_or_else(|| {
                failed(
                    StatusCode::ResourceExhausted,
                    format!(
                        "could not allocate {} bytes of workgroup memory",
                        self.local_memory_size
                    ),
                )
            })
    }

    /// Runs workgroup `index` (x fastest) as `processor`.
    fn run(
        &self,
        index: u64,
        processor: usize,
        memory: &Option<HostMemory>,
    ) -> Result<(), StatusError> {
        let (cx, cy) = (
            u64::from(self.state.workgroup_count_x),
            u64::from(self.state.workgroup_count_y),
        );
        let workgroup = WorkgroupState {
            workgroup_id_x: (index % cx) as u32,
            workgroup_id_y: (index / cx % cy) as u32,
            workgroup_id_z: (index / cx / cy) as u16,
            reserved: 0,
            processor_id: processor as u32,
            local_memory: memory
                .as_ref()
                .map_or(std::ptr::null_mut(), |m| m.as_mut_ptr().cast::<c_void>()),
            local_memory_size: memory.as_ref().map_or(0, |m| m.len() as u32),
        };
        // The function is an export of a loaded library (see `load`); the environment,
        // dispatch state and workgroup state are valid for the call, with binding pointers and
        // lengths taken from live, bounds-checked HAL buffer ranges and constants/local memory
        // of the sizes the export's attributes declare.
        // SAFETY: a loaded export, called with the valid states described above.
        let status = unsafe { (self.function)(self.environment, self.state, &workgroup) };
        if status != 0 {
            return Err(failed(
                StatusCode::Internal,
                format!(
                    "executable entry point `{}` returned catastrophic error {status}",
                    self.name
                ),
            ));
        }
        Ok(())
    }
}
