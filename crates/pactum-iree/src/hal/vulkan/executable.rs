//! `vulkan-spirv-fb` executables: the parsed [`ExecutableDef`] made into Vulkan objects once,
//! when the executable is created: a shader module per SPIR-V module, a descriptor set layout
//! per layout, a pipeline layout per layout, a compute pipeline per export.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use ash::vk;

use super::context::{VulkanContext, vk_error};
use super::spirv_fb::ExecutableDef;
use crate::hal::executable::HalExecutable;
use crate::status::{StatusCode, StatusError};

/// The format of Vulkan executables.
pub const VULKAN_SPIRV_FORMAT: &str = "vulkan-spirv-fb";

/// One export, ready to dispatch.
#[derive(Debug)]
pub(super) struct Export {
    pub(super) name: String,
    pub(super) pipeline: vk::Pipeline,
    pub(super) layout: vk::PipelineLayout,
    /// The set layouts of sets 0, 1, ...
    pub(super) set_layouts: Vec<vk::DescriptorSetLayout>,
    /// Where each dispatch binding goes: `(set, binding)`.
    pub(super) binding_slots: Vec<(u32, u32)>,
    /// The push constant bytes the layout declares.
    pub(super) constant_bytes: u32,
}

/// A loaded Vulkan executable. Its Vulkan objects are destroyed when it is dropped; command
/// buffers hold it (an `Arc`) until every execution that uses it has completed.
pub struct VulkanExecutable {
    pub(super) context: Arc<VulkanContext>,
    pub(super) exports: Vec<Export>,
    shader_modules: Vec<vk::ShaderModule>,
    set_layouts: Vec<vk::DescriptorSetLayout>,
    pipeline_layouts: Vec<vk::PipelineLayout>,
}

impl fmt::Debug for VulkanExecutable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VulkanExecutable")
            .field(
                "exports",
                &self.exports.iter().map(|e| &e.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl HalExecutable for VulkanExecutable {
    fn format(&self) -> &str {
        VULKAN_SPIRV_FORMAT
    }

    fn export_count(&self) -> usize {
        self.exports.len()
    }

    fn export_name(&self, ordinal: usize) -> Option<&str> {
        self.exports.get(ordinal).map(|e| e.name.as_str())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for VulkanExecutable {
    fn drop(&mut self) {
        let device = &self.context.device;
        // SAFETY: objects made on this device, destroyed once, here; no submitted work uses
        // them (submissions hold the executable until they complete).
        unsafe {
            for export in &self.exports {
                device.destroy_pipeline(export.pipeline, None);
            }
            for &layout in &self.pipeline_layouts {
                device.destroy_pipeline_layout(layout, None);
            }
            for &layout in &self.set_layouts {
                device.destroy_descriptor_set_layout(layout, None);
            }
            for &module in &self.shader_modules {
                device.destroy_shader_module(module, None);
            }
        }
    }
}

impl VulkanExecutable {
    /// Parses `data` and makes its Vulkan objects. The SPIR-V goes to the driver as the
    /// compiler wrote it: pactum checks the container, not the shaders.
    pub(super) fn load(
        context: &Arc<VulkanContext>,
        data: &[u8],
        constants: &[u32],
    ) -> Result<VulkanExecutable, StatusError> {
        if !constants.is_empty() {
            return Err(StatusError::new(
                StatusCode::Unimplemented,
                format!(
                    "vulkan: executable-level constants ({} given) are not supported",
                    constants.len()
                ),
            ));
        }
        let def = ExecutableDef::parse(data)?;
        let device = &context.device;
        // Made one by one into `executable`, whose drop destroys whatever was made if a later
        // step fails.
        let mut executable = VulkanExecutable {
            context: context.clone(),
            exports: Vec::new(),
            shader_modules: Vec::new(),
            set_layouts: Vec::new(),
            pipeline_layouts: Vec::new(),
        };
        for code in &def.shader_modules {
            let info = vk::ShaderModuleCreateInfo::default().code(code);
            // SAFETY: `code` lives across the call. The driver parses the SPIR-V: pactum
            // passes it as the module carries it (see the trust note of `hal::vulkan`).
            let module = unsafe { device.create_shader_module(&info, None) }
                .map_err(|e| vk_error("vkCreateShaderModule", e))?;
            executable.shader_modules.push(module);
        }
        for bindings in &def.descriptor_set_layouts {
            let bindings: Vec<_> = bindings
                .iter()
                .map(|b| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b.binding)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
            // SAFETY: `bindings` lives across the call.
            let layout = unsafe { device.create_descriptor_set_layout(&info, None) }
                .map_err(|e| vk_error("vkCreateDescriptorSetLayout", e))?;
            executable.set_layouts.push(layout);
        }
        let max_push = context.limits.max_push_constants_size;
        let limits = &context.limits;
        for (i, layout) in def.pipeline_layouts.iter().enumerate() {
            // The device's limits, which Vulkan leaves to the application to respect.
            let storage: usize = layout
                .set_layouts
                .iter()
                .map(|&s| def.descriptor_set_layouts[s as usize].len())
                .sum();
            if layout.set_layouts.len() > limits.max_bound_descriptor_sets as usize
                || storage > limits.max_per_stage_descriptor_storage_buffers as usize
            {
                return Err(StatusError::new(
                    StatusCode::OutOfRange,
                    format!(
                        "vulkan: pipeline layout {i} has {} descriptor sets and {storage} storage \
                         buffers; device {} binds at most {} sets and {} storage buffers",
                        layout.set_layouts.len(),
                        context.index,
                        limits.max_bound_descriptor_sets,
                        limits.max_per_stage_descriptor_storage_buffers
                    ),
                ));
            }
            let sets: Vec<_> = layout
                .set_layouts
                .iter()
                .map(|&s| executable.set_layouts[s as usize])
                .collect();
            let mut ranges = Vec::new();
            for range in &layout.push_constant_ranges {
                if u64::from(range.offset) + u64::from(range.size) > u64::from(max_push) {
                    return Err(StatusError::new(
                        StatusCode::OutOfRange,
                        format!(
                            "vulkan: pipeline layout {i} pushes constants up to byte {}, past \
                             the device's {max_push}",
                            u64::from(range.offset) + u64::from(range.size)
                        ),
                    ));
                }
                ranges.push(
                    vk::PushConstantRange::default()
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                        .offset(range.offset)
                        .size(range.size),
                );
            }
            let info = vk::PipelineLayoutCreateInfo::default()
                .set_layouts(&sets)
                .push_constant_ranges(&ranges);
            // SAFETY: the set layouts are this device's, alive; arrays live across the call.
            let pipeline_layout = unsafe { device.create_pipeline_layout(&info, None) }
                .map_err(|e| vk_error("vkCreatePipelineLayout", e))?;
            executable.pipeline_layouts.push(pipeline_layout);
        }
        for (ordinal, pipeline) in def.pipelines.iter().enumerate() {
            let entry = std::ffi::CString::new(pipeline.entry_point.as_str()).map_err(|_| {
                StatusError::invalid_argument(format!(
                    "vulkan-spirv-fb executable: pipelines[{ordinal}].entry_point holds a NUL"
                ))
            })?;
            let layout = executable.pipeline_layouts[pipeline.pipeline_layout as usize];
            let mut subgroup = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
                .required_subgroup_size(pipeline.subgroup_size);
            let mut stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(executable.shader_modules[pipeline.shader_module as usize])
                .name(&entry);
            if pipeline.subgroup_size != 0 {
                if !context.subgroup_size_control {
                    return Err(StatusError::new(
                        StatusCode::Unimplemented,
                        format!(
                            "vulkan: export {} requires subgroup size {}, and device {} ({}) \
                             has no subgroupSizeControl",
                            pipeline.entry_point,
                            pipeline.subgroup_size,
                            context.index,
                            context.name
                        ),
                    ));
                }
                stage = stage.push_next(&mut subgroup);
            }
            let info = [vk::ComputePipelineCreateInfo::default()
                .stage(stage)
                .layout(layout)];
            // SAFETY: the module and layout are this device's and alive; `entry` and the
            // chain live across the call.
            let made =
                unsafe { device.create_compute_pipelines(vk::PipelineCache::null(), &info, None) };
            let pipeline_handle = match made {
                Ok(mut pipelines) => pipelines.pop().unwrap_or_default(),
                Err((pipelines, e)) => {
                    for p in pipelines.into_iter().filter(|p| *p != vk::Pipeline::null()) {
                        // SAFETY: made by the failed call, used by nothing.
                        unsafe { device.destroy_pipeline(p, None) };
                    }
                    return Err(vk_error(
                        &format!("vkCreateComputePipelines for {}", pipeline.entry_point),
                        e,
                    ));
                }
            };
            let set_layouts = def.pipeline_layouts[pipeline.pipeline_layout as usize]
                .set_layouts
                .iter()
                .map(|&s| executable.set_layouts[s as usize])
                .collect();
            executable.exports.push(Export {
                name: pipeline.entry_point.clone(),
                pipeline: pipeline_handle,
                layout,
                set_layouts,
                binding_slots: def.binding_slots(ordinal),
                constant_bytes: def.push_constant_bytes(ordinal),
            });
        }
        Ok(executable)
    }
}
