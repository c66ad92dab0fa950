//! The Vulkan objects one device lives on: the loader (libvulkan, opened at run time), an
//! instance, the chosen physical device, a logical device with one compute queue, and the
//! facts the rest of the driver asks (memory types, limits, features).

use std::ffi::CStr;
use std::fmt;

use ash::vk;

use super::blocks::MemoryBlocks;
use super::options::VulkanMemoryMode;
use crate::status::{StatusCode, StatusError};

/// The Vulkan version pactum asks for: 1.1 at least (`vkGetPhysicalDeviceFeatures2`), up to
/// 1.3 (required subgroup sizes are core there).
const MIN_API_VERSION: u32 = vk::API_VERSION_1_1;
const MAX_API_VERSION: u32 = vk::API_VERSION_1_3;

/// Every access a later step of a command buffer may make to memory an earlier step wrote
/// (dispatches, transfers, indirect workgroup counts): the destination of the queue's full
/// barriers and of the barrier after staged uploads.
pub(super) fn every_later_access() -> vk::AccessFlags {
    vk::AccessFlags::SHADER_READ
        | vk::AccessFlags::SHADER_WRITE
        | vk::AccessFlags::TRANSFER_READ
        | vk::AccessFlags::TRANSFER_WRITE
        | vk::AccessFlags::INDIRECT_COMMAND_READ
}

/// The error of a failed Vulkan call `what`.
pub(super) fn vk_error(what: &str, result: vk::Result) -> StatusError {
    let status = match result {
        vk::Result::ERROR_OUT_OF_HOST_MEMORY | vk::Result::ERROR_OUT_OF_DEVICE_MEMORY => {
            StatusCode::ResourceExhausted
        }
        vk::Result::ERROR_DEVICE_LOST => StatusCode::Unavailable,
        vk::Result::ERROR_INCOMPATIBLE_DRIVER
        | vk::Result::ERROR_INITIALIZATION_FAILED
        | vk::Result::ERROR_FEATURE_NOT_PRESENT
        | vk::Result::ERROR_EXTENSION_NOT_PRESENT => StatusCode::Unavailable,
        _ => StatusCode::Internal,
    };
    StatusError::new(status, format!("vulkan: {what} failed: {result}"))
}

/// A Vulkan logical device and what it was made from. Destroyed (device, then instance) when
/// the last owner drops it: every buffer, executable and submission holds an `Arc` of it.
pub(crate) struct VulkanContext {
    /// Keeps libvulkan loaded while anything made from it lives (dropped last).
    _entry: ash::Entry,
    instance: ash::Instance,
    pub(super) device: ash::Device,
    pub(super) queue: vk::Queue,
    pub(super) queue_family: u32,
    /// The device's memory types and heaps, as the driver reports them.
    pub(super) memory: vk::PhysicalDeviceMemoryProperties,
    /// How buffers use those types: as reported, or a forced mode (`memory`).
    pub(super) memory_mode: VulkanMemoryMode,
    /// The blocks buffers are sub-allocated from (freed before the device is destroyed).
    pub(super) blocks: MemoryBlocks,
    pub(super) limits: vk::PhysicalDeviceLimits,
    /// The driver's name for the device (`llvmpipe (LLVM 19.1.7, 256 bits)`).
    pub(super) name: String,
    /// Which of the loader's devices this is.
    pub(super) index: usize,
    /// Whether pipelines may require a subgroup size (Vulkan 1.3's `subgroupSizeControl`).
    pub(super) subgroup_size_control: bool,
    /// The most a timeline semaphore's value may differ from a value waited for or signalled
    /// (`maxTimelineSemaphoreValueDifference`).
    pub(super) max_timeline_difference: u64,
}

impl fmt::Debug for VulkanContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VulkanContext")
            .field("name", &self.name)
            .field("index", &self.index)
            .finish()
    }
}

fn unavailable(message: impl Into<String>) -> StatusError {
    StatusError::new(StatusCode::Unavailable, message)
}

fn device_name(properties: &vk::PhysicalDeviceProperties) -> String {
    properties
        .device_name_as_c_str()
        .map(|n: &CStr| n.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "(unnamed)".to_owned())
}

impl VulkanContext {
    /// Opens the loader and makes a device on its `index`-th physical device, whose buffers
    /// use memory as `memory_mode` says.
    pub(super) fn open(
        index: usize,
        memory_mode: VulkanMemoryMode,
    ) -> Result<VulkanContext, StatusError> {
        // SAFETY: loading libvulkan runs its initialisers; the Vulkan loader is a library
        // made to be loaded at run time and has no initialiser with preconditions on us.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| {
            unavailable(format!(
                "vulkan: cannot load the Vulkan loader (libvulkan.so.1): {e}; install it and a \
                 driver (Debian: `apt-get install libvulkan1 mesa-vulkan-drivers`)"
            ))
        })?;
        // SAFETY: a global command on a loaded entry, no arguments to keep valid.
        let loader_version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(|e| vk_error("vkEnumerateInstanceVersion", e))?
            .unwrap_or(vk::API_VERSION_1_0);
        if loader_version < MIN_API_VERSION {
            return Err(unavailable(format!(
                "vulkan: the loader offers Vulkan {}.{}; pactum needs 1.1",
                vk::api_version_major(loader_version),
                vk::api_version_minor(loader_version)
            )));
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"pactum")
            .engine_name(c"pactum")
            .api_version(loader_version.min(MAX_API_VERSION));
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: `info` and what it points to live across the call; no allocator.
        let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| {
            if e == vk::Result::ERROR_INCOMPATIBLE_DRIVER {
                unavailable(format!(
                    "vulkan: the Vulkan loader found no driver (vkCreateInstance: {e}); install \
                     one (Debian: `apt-get install mesa-vulkan-drivers` gives lavapipe, a CPU \
                     driver)"
                ))
            } else {
                vk_error("vkCreateInstance", e)
            }
        })?;
        // From here on, a failure destroys the instance before it returns.
        match VulkanContext::on_instance(&instance, index) {
            Ok(parts) => Ok(VulkanContext {
                _entry: entry,
                instance,
                device: parts.device,
                queue: parts.queue,
                queue_family: parts.queue_family,
                memory: parts.memory,
                memory_mode,
                blocks: MemoryBlocks::default(),
                limits: parts.limits,
                name: parts.name,
                index,
                subgroup_size_control: parts.subgroup_size_control,
                max_timeline_difference: parts.max_timeline_difference,
            }),
            Err(e) => {
                // SAFETY: nothing made from the instance is alive (`on_instance` destroys
                // what it made before it fails).
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    fn on_instance(instance: &ash::Instance, index: usize) -> Result<DeviceParts, StatusError> {
        // SAFETY: a valid instance.
        let physicals = unsafe { instance.enumerate_physical_devices() }
            .map_err(|e| vk_error("vkEnumeratePhysicalDevices", e))?;
        if physicals.is_empty() {
            return Err(unavailable(
                "vulkan: the Vulkan loader found no device; install a driver (Debian: \
                 `apt-get install mesa-vulkan-drivers` gives lavapipe, a CPU driver)",
            ));
        }
        let names: Vec<String> = physicals
            .iter()
            // SAFETY: handles the instance enumerated.
            .map(|&p| device_name(&unsafe { instance.get_physical_device_properties(p) }))
            .collect();
        let Some(&physical) = physicals.get(index) else {
            return Err(StatusError::new(
                StatusCode::NotFound,
                format!(
                    "vulkan://{index}: the Vulkan loader found {} device(s): {}",
                    physicals.len(),
                    names
                        .iter()
                        .enumerate()
                        .map(|(i, n)| format!("{i}: {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        };
        // SAFETY: a handle the instance enumerated.
        let properties = unsafe { instance.get_physical_device_properties(physical) };
        let name = device_name(&properties);
        let api_version = properties.api_version.min(MAX_API_VERSION);
        if api_version < MIN_API_VERSION {
            return Err(unavailable(format!(
                "vulkan: device {index} ({name}) offers Vulkan {}.{}; pactum needs 1.1",
                vk::api_version_major(api_version),
                vk::api_version_minor(api_version)
            )));
        }
        // SAFETY: a handle the instance enumerated.
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
        let queue_family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or_else(|| {
                unavailable(format!(
                    "vulkan: device {index} ({name}) has no compute queue"
                ))
            })? as u32;

        // Every feature of the core feature structures the device has is enabled (IREE's
        // SPIR-V may use 8/16-bit storage, int64, float16, subgroup operations...); enabling a
        // supported feature is always allowed.
        let mut v11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut v13 = vk::PhysicalDeviceVulkan13Features::default();
        let core = {
            let mut query = vk::PhysicalDeviceFeatures2::default().push_next(&mut v11);
            if api_version >= vk::API_VERSION_1_2 {
                query = query.push_next(&mut v12);
            }
            if api_version >= vk::API_VERSION_1_3 {
                query = query.push_next(&mut v13);
            }
            // SAFETY: `query` heads a chain of structures of the device's version, all alive.
            unsafe { instance.get_physical_device_features2(physical, &mut query) };
            query.features
        };
        let subgroup_size_control = v13.subgroup_size_control == vk::TRUE;
        // Queue operations wait for and signal timeline semaphores (core in Vulkan 1.2, where
        // the feature is required).
        if v12.timeline_semaphore != vk::TRUE {
            return Err(unavailable(format!(
                "vulkan: device {index} ({name}) has no timeline semaphores (Vulkan 1.2's \
                 `timelineSemaphore`), which pactum's queue needs"
            )));
        }
        let max_timeline_difference = {
            let mut timeline = vk::PhysicalDeviceTimelineSemaphoreProperties::default();
            let mut query = vk::PhysicalDeviceProperties2::default().push_next(&mut timeline);
            // SAFETY: `query` heads a chain of structures of the device's version, all alive.
            unsafe { instance.get_physical_device_properties2(physical, &mut query) };
            timeline.max_timeline_semaphore_value_difference
        };
        // The same structures, filled, chained again for device creation.
        v11.p_next = std::ptr::null_mut();
        v12.p_next = std::ptr::null_mut();
        v13.p_next = std::ptr::null_mut();
        let mut features = vk::PhysicalDeviceFeatures2::default()
            .features(core)
            .push_next(&mut v11);
        if api_version >= vk::API_VERSION_1_2 {
            features = features.push_next(&mut v12);
        }
        if api_version >= vk::API_VERSION_1_3 {
            features = features.push_next(&mut v13);
        }

        let priorities = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities)];
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .push_next(&mut features);
        // SAFETY: `info`'s chain (queried above, so every feature in it is supported) lives
        // across the call.
        let device = unsafe { instance.create_device(physical, &info, None) }
            .map_err(|e| vk_error("vkCreateDevice", e))?;
        // SAFETY: the family was requested with one queue.
        let queue = unsafe { device.get_device_queue(queue_family, 0) };
        // SAFETY: a handle the instance enumerated.
        let memory = unsafe { instance.get_physical_device_memory_properties(physical) };
        Ok(DeviceParts {
            device,
            queue,
            queue_family,
            memory,
            limits: properties.limits,
            name,
            subgroup_size_control,
            max_timeline_difference,
        })
    }
}

struct DeviceParts {
    device: ash::Device,
    queue: vk::Queue,
    queue_family: u32,
    memory: vk::PhysicalDeviceMemoryProperties,
    limits: vk::PhysicalDeviceLimits,
    name: String,
    subgroup_size_control: bool,
    max_timeline_difference: u64,
}

impl Drop for VulkanContext {
    fn drop(&mut self) {
        // Every object made on the device (buffers, memory, pipelines, pools) holds an owner
        // of the context and is destroyed first, so no buffer is bound to a block any more.
        // SAFETY: the last owner is gone; waiting for idle finishes any work still queued.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.blocks.destroy_all(&self.device);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
