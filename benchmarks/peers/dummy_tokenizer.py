# dummy_tokenizer.py N OUT.bin: a llama2.c tokenizer.bin of N pieces, piece i being "i ", so that
# a model with random weights exported with -z OUT.bin carries a vocabulary llama.cpp accepts and
# every engine prints the same ids. Usage: python3 dummy_tokenizer.py 32000 tok32000.bin
import struct, sys
n, out = int(sys.argv[1]), sys.argv[2]
with open(out, 'wb') as f:
    f.write(struct.pack('<i', 16))  # max_token_length
    for i in range(n):
        piece = (str(i) + ' ').encode()
        f.write(struct.pack('<fi', 0.0, len(piece)))
        f.write(piece)
