pbitmap-profile 1
# Learned with: gcc -O2 -g hello.c; strip; pbitmap add --learn=every; pbitmap record -- ./pbitmap-hello
# then: pbitmap export (path set to the installed one).  rpm-scripts/example/pbitmap-hello.spec

file /usr/bin/pbitmap-hello
kind elf
size 51344
sha256 42177ee2523e8bad2482639502711a6a1171d88993265fab6278623da0f5d6f3
build-id 2657819332f6df2f02efaf73ebd1c6dd080a149d
granule 4096
learn every
threshold 1
generations 4
runs 1
last-update 1795665757
gen 0 0+12288 40960+10384
gen 1
gen 2
gen 3
anchor section @headers 0 792
anchor section .interp 792 28
anchor section .note.gnu.property 824 32
anchor section .note.gnu.build-id 856 36
anchor section .note.ABI-tag 892 32
anchor section .gnu.hash 928 36
anchor section .dynsym 968 168
anchor section .dynstr 1136 143
anchor section .gnu.version 1280 14
anchor section .gnu.version_r 1296 48
anchor section .rela.dyn 1344 192
anchor section .rela.plt 1536 24
anchor section .init 4096 23
anchor section .plt 4128 32
anchor section .plt.got 4160 8
anchor section .text 8192 32786
anchor section .fini 40980 9
anchor section .rodata 45056 21
anchor section .eh_frame_hdr 45080 108
anchor section .eh_frame 45192 328
anchor section .init_array 48592 8
anchor section .fini_array 48600 8
anchor section .dynamic 48608 480
anchor section .got 49088 40
anchor section .got.plt 49128 32
anchor section .data 49160 16
anchor section .comment 49176 39
anchor section .shstrtab 49215 266
anchor function 0 8441c8dbbcaf1e93 4128 32
anchor function 1 3dda6e4e41e5e75f 4160 8
anchor function 2 013ed981a053b4a9 8192 63
anchor function 3 35d3cb992ccf769d 8256 34
anchor function 4 d41bec5e163d2d47 12288 16
anchor function 10 72a9286dd3e8a931 36864 22
anchor function 11 358eb04e5891b15d 40960 18
end
