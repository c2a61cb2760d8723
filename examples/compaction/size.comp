#version 450
// size: turns the number of survivors into the group counts of the next
// launch, ceil(count / per) groups in x, one in y and z, on the device:
// no host ever reads the count.
// Bindings: 0 count (read), 1 groups (write, 3 words). Push: per uint32.
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) readonly buffer Count { uint count; };
layout(std430, set = 0, binding = 1) writeonly buffer Groups { uint groups[3]; };
layout(push_constant) uniform Push { uint per; } pc;
void main() {
    groups[0] = (count + pc.per - 1u) / pc.per;
    groups[1] = 1u;
    groups[2] = 1u;
}
