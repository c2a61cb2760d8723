#version 450
// groupcount: records the geometry it ran with. Every invocation (one per
// group) adds 1 to seen[0] and raises seen[1], seen[2], seen[3] to its
// group's x, y, z plus one, so afterwards seen holds the number of groups
// and the group counts in each dimension (zeros if none ran).
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Seen { uint seen[4]; };
void main() {
    atomicAdd(seen[0], 1u);
    atomicMax(seen[1], gl_WorkGroupID.x + 1u);
    atomicMax(seen[2], gl_WorkGroupID.y + 1u);
    atomicMax(seen[3], gl_WorkGroupID.z + 1u);
}
