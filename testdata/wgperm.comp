#version 450
// wgperm: extent[a] = the workgroup's size along axis a, measured by its
// invocations (the largest local invocation ID + 1), not read from
// gl_WorkGroupSize. The default size is 4 x 3 x 2; gen.sh builds the
// module once per assignment of specialization-constant IDs to axes,
// wgperm_XYZ.spv, each of X, Y, Z the ID that sizes that axis (0, 1 or 2;
// -DX_ID=...) or n where the axis is not specializable.
// Bindings: 0 extent (read-write, three uints, zero before the launch).
layout(local_size_x = 4, local_size_y = 3, local_size_z = 2) in;
#ifdef X_ID
layout(local_size_x_id = X_ID) in;
#endif
#ifdef Y_ID
layout(local_size_y_id = Y_ID) in;
#endif
#ifdef Z_ID
layout(local_size_z_id = Z_ID) in;
#endif
layout(std430, set = 0, binding = 0) buffer Extent { uint extent[3]; };
void main() {
    atomicMax(extent[0], gl_LocalInvocationID.x + 1);
    atomicMax(extent[1], gl_LocalInvocationID.y + 1);
    atomicMax(extent[2], gl_LocalInvocationID.z + 1);
}
